"""The op types with no ONNX form, each with the reason an export error gives.

Every op type of the registry has a rule in `RULES` or a reason here (tests/ops/test_creation.py
checks it), so an op added to the registry needs a decision: a rule, or a reason."""

from __future__ import annotations

_GRADIENT_KERNEL = ("a gradient kernel with no ONNX operator; ONNX models are inference graphs: "
                    "export the forward graph")
_ASSIGNMENT = ("assigns a variable, and ONNX models are stateless inference graphs (a control "
               "dependency on an assignment also brings it in)")
_RANDOM = ("draws from the session's random generator, whose values ONNX Runtime's "
           "RandomNormal/RandomUniform cannot reproduce; feed the draws as an input instead")
_STRING = ("a string op: the exporter writes numeric inference graphs and maps none of ONNX's "
           "few string operators; keep string work outside the exported graph")
NO_ONNX: dict[str, str] = {
    "Placeholder": "a placeholder is a model input only when it is in feed_list",
    "NoOp": ("computes nothing: groups and control dependencies have no ONNX form; fetch "
             "tensors, not operations"),
    "Transfer": ("moves a value between a plan's backends (passes/partition.py); only the "
                 "compiler makes one, no graph holds one"),
    "If": ("a cond, whose branches are sub-graphs; the exporter does not map them to ONNX's "
           "If yet: export a graph without sg.cond"),
    "While": ("a while_loop, whose condition and body are sub-graphs; the exporter does not "
              "map them to ONNX's Loop yet: export a graph without sg.while_loop"),
    "WhileGrad": _GRADIENT_KERNEL,
    "Scan": ("a scan, map_fn or fold, whose body is a sub-graph; the exporter does not map it "
             "to ONNX's Scan yet: export a graph without them"),
    "Assert": ("a run-time check that raises when its condition is false, and an ONNX graph "
               "cannot raise; export the tensors it guards"),
    "CheckNumerics": ("a run-time check that raises on NaN or Inf, and an ONNX graph cannot "
                      "raise; export the checked tensor itself"),
    "LinSpace": ("ONNX has no linspace; a linspace of values known when the graph is built "
                 "(at most 1024 of them) is stored as a constant"),
    "Assign": _ASSIGNMENT, "AssignAdd": _ASSIGNMENT, "AssignSub": _ASSIGNMENT,
    "ScatterAdd": _ASSIGNMENT, "ScatterSub": _ASSIGNMENT, "ScatterUpdate": _ASSIGNMENT,
    "RandomStandardNormal": _RANDOM, "RandomUniform": _RANDOM,
    "TruncatedNormal": _RANDOM + " (and ONNX has no truncated normal)",
    "LogUniformCandidates": _RANDOM + " (and ONNX has no candidate sampler)",
    "Conv2DBackpropFilter": _GRADIENT_KERNEL, "MaxPoolGrad": _GRADIENT_KERNEL,
    "MaxPoolGradGrad": _GRADIENT_KERNEL, "AvgPoolGrad": _GRADIENT_KERNEL,
    "GatherGrad": _GRADIENT_KERNEL, "StridedSliceGrad": _GRADIENT_KERNEL,
    "TensorArrayWriteGrad": _GRADIENT_KERNEL,
    "Cumprod": "ONNX has no running product; export a graph without sg.cumprod",
    "Print": "prints as it runs, and an ONNX graph has no side effects; export its input",
    "PrintV2": "prints as it runs, and an ONNX graph has no side effects",
    "PyFunc": "calls a Python function of this process, which an ONNX model cannot hold",
    "Unique": ("its outputs' length is known only when it runs; the exporter does not map "
               "it to ONNX's Unique yet: export a graph without sg.unique"),
    **{t: ("a TensorBoard summary (bytes for an event file), which an inference graph has no "
           "use for") for t in ("ScalarSummary", "HistogramSummary", "ImageSummary",
                                "TensorSummaryV2", "MergeSummary")},
    **{t: _STRING for t in ("AsString", "StringJoin", "ReduceJoin", "StringLength",
                            "StringLower", "StringUpper", "StringStrip", "Substr",
                            "StringToNumber", "RegexReplace", "RegexFullMatch")},
}
