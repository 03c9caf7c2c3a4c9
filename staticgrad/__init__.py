"""staticgrad: a define-then-run compiler for numerical graphs, with TF1's API.

    import staticgrad as sg          # or: import staticgrad as tf
    x = sg.placeholder(sg.float32, [None, 3])
    w = sg.Variable([[1.0], [2.0], [3.0]])
    y = sg.matmul(x, w)
    with sg.Session() as sess:
        sess.run(sg.global_variables_initializer())
        print(sess.run(y, {x: [[1, 1, 1]]}))
        print(sess.source(y, {x: [[1, 1, 1]]}))   # the generated NumPy code
"""

from . import (  # noqa: F401
    _namespace,
    compat,
    debugging,
    dynamic,
    errors,
    initializers,
    layers,
    losses,
    math,
    metrics,
    random,
    runtime,
    strings,
    summary,
    train,
    viz,
)
from . import rnn as _rnn
from .autodiff import (  # noqa: F401
    NoGradient,
    NotDifferentiable,
    RegisterGradient,
    custom_gradient,
    gradients,
    hessians,
    jacobian,
)
from .backends import available_backends  # noqa: F401
from .backends.numpy import fast as runtime_fast  # noqa: F401 (sg.runtime_fast.why_not())
from .compiler import CompileOptions  # noqa: F401
from .config import ConfigProto, GPUOptions, RunMetadata, RunOptions  # noqa: F401
from .control_flow import (  # noqa: F401
    TensorArray,
    case,
    cond,
    foldl,
    foldr,
    map_fn,
    scan,
    while_loop,
)
from .dtypes import (  # noqa: F401
    DType,
    as_dtype,
    bool_,
    double,
    float16,
    float32,
    float64,
    half,
    int8,
    int16,
    int32,
    int64,
    string,
    uint8,
)
from .export import export  # noqa: F401
from .graph import (  # noqa: F401
    Graph,
    GraphKeys,
    Operation,
    Tensor,
    add_to_collection,
    add_to_collections,
    control_dependencies,
    device,
    disable_eager_execution,
    disable_v2_behavior,
    executing_eagerly,
    get_collection,
    get_collection_ref,
    get_default_graph,
    get_default_session,  # noqa: F401
    name_scope,
    reset_default_graph,
)
from .graph_def import GraphDef, import_graph_def  # noqa: F401
from .initializers import (  # noqa: F401
    constant_initializer,
    glorot_normal_initializer,
    glorot_uniform_initializer,
    ones_initializer,
    random_normal_initializer,
    random_uniform_initializer,
    truncated_normal_initializer,
    variance_scaling_initializer,
    zeros_initializer,
)
from .ops import nn_ops as nn  # noqa: F401
from .ops import vocabulary as _vocabulary
from .ops.array_ops import (  # noqa: F401
    broadcast_to,
    expand_dims,
    fill,
    ones,
    ones_like,
    rank,
    reshape,
    shape,
    size,
    squeeze,
    transpose,
    zeros,
    zeros_like,
)
from .ops.check_ops import (  # noqa: F401
    assert_equal,
    assert_greater,
    assert_greater_equal,
    assert_integer,
    assert_less,
    assert_less_equal,
    assert_negative,
    assert_non_negative,
    assert_non_positive,
    assert_none_equal,
    assert_positive,
    assert_rank,
    assert_rank_at_least,
    assert_scalar,
    assert_type,
)
from .ops.clip_ops import clip_by_global_norm, clip_by_norm, global_norm  # noqa: F401
from .ops.conversion import constant, convert_to_tensor  # noqa: F401
from .ops.cumulative_ops import cumprod, cumsum  # noqa: F401
from .ops.debug_ops import (  # noqa: F401
    Assert,
    add_check_numerics_ops,
    check_numerics,
    verify_tensor_all_finite,
)
from .ops.einsum_ops import einsum  # noqa: F401
from .ops.indexed_slices import IndexedSlices, IndexedSlicesValue  # noqa: F401
from .ops.indexing_ops import eye, gather, lin_space, linspace, one_hot, range, slice  # noqa: F401
from .ops.join_ops import concat, pad, split, stack, tile, unstack  # noqa: F401
from .ops.math_impl import (  # noqa: F401
    norm,
    reduce_logsumexp,
    reverse,
    reverse_v2,
    sequence_mask,
    tensordot,
    to_double,
    to_int32,
    to_int64,
)
from .ops.math_ops import (  # noqa: F401
    add_n,
    cast,
    clip_by_value,
    div,
    divide,
    leaky_relu,
    matmul,
    to_float,
    truediv,
    where,
)
from .ops.nd_ops import boolean_mask, gather_nd, scatter_nd  # noqa: F401
from .ops.nn_impl import squared_difference  # noqa: F401
from .ops.print_ops import Print  # noqa: F401
from .ops.print_ops import print_ as print  # noqa: F401, A004 - TF1's name
from .ops.py_func_ops import numpy_function, py_func  # noqa: F401
from .ops.reduction_ops import (  # noqa: F401
    arg_max,
    arg_min,
    argmax,
    argmin,
    reduce_all,
    reduce_any,
    reduce_max,
    reduce_mean,
    reduce_min,
    reduce_prod,
    reduce_sum,
)
from .ops.sort_ops import argsort, sort, unique  # noqa: F401
from .ops.state_ops import (  # noqa: F401
    assign,
    assign_add,
    assign_sub,
    group,
    no_op,
    placeholder,
    placeholder_with_default,
    random_normal,
    random_uniform,
    scatter_add,
    scatter_sub,
    scatter_update,
    set_random_seed,
    truncated_normal,
)
from .ops.state_ops import tuple_ as tuple  # noqa: F401, A001 - TF1's name
from .ops.string_ops import (  # noqa: F401
    as_string,
    reduce_join,
    regex_replace,
    string_join,
    string_strip,
    string_to_number,
    substr,
)
from .platform import app, flags, gfile  # noqa: F401
from .platform import tf_logging as logging  # noqa: F401
from .session import InteractiveSession, Session  # noqa: F401
from .shapes import Dimension, TensorShape  # noqa: F401
from .summary import Summary  # noqa: F401
from .variable_scope import (  # noqa: F401
    AUTO_REUSE,
    VariableScope,
    get_variable,
    get_variable_scope,
    variable_scope,
)
from .variables import (  # noqa: F401
    Variable,
    all_variables,
    global_variables,
    global_variables_initializer,
    initialize_all_variables,
    initialize_local_variables,
    local_variables,
    local_variables_initializer,
    trainable_variables,
    variables_initializer,
)

newaxis = None
bool = bool_  # noqa: A001 - TF1's name for the boolean dtype
__version__ = "0.1.0"

# The elementwise functions the op vocabulary offers in sg (sg.tanh...): ops/vocabulary.py
globals().update(_vocabulary.namespace("sg"))

# sg.nn.rnn_cell, sg.nn.dynamic_rnn...: installed from here, as sg.nn is a layer below them
_rnn.install(nn)

# The public API: every name bound above, less the package's own modules (which the import
# system binds here too: sg.compiler, sg.ops...) other than these namespaces.
__all__ = _namespace.public_names(globals(), subnamespaces=(
    "app", "compat", "debugging", "dynamic", "errors", "flags", "gfile", "initializers", "layers",
    "logging", "losses", "math", "metrics", "nn", "random", "strings", "summary", "train",
    "runtime_fast"))
__dir__ = _namespace.public_dir(globals())
__getattr__ = _namespace.missing_name("staticgrad", "tf", globals())
