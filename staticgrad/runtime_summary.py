"""The summary kernels generated code calls as `rt.<name>`: each gives a serialized TensorBoard
`Summary` protocol buffer (a 0-d string array), as TF1's summary ops do.

The protocol buffers are tensorboardX's (the `[tensorboard]` extra), which also encodes
images as PNG through Pillow; nothing here writes the wire format by hand. Without the extra,
`require` names what to install (the summary builders call it, so a program finds out when it
builds the op, not at its first run).
"""

from __future__ import annotations

import functools

import numpy as np

INSTALL = "pip install 'staticgrad[tensorboard]'"


def require(what: str):
    """tensorboardX's summary module, or ImportError saying `what` needs the extra."""
    try:
        from tensorboardX import summary
    except ImportError as e:
        raise ImportError(f"{what} writes TensorBoard summaries through tensorboardX, which is "
                          f"not installed: {INSTALL} ({e})") from None
    return summary


def _serialized(summary) -> np.ndarray:
    out = np.empty((), dtype=object)
    out[()] = summary.SerializeToString()
    return out


def summary_scalar(tag, value):
    """A Summary holding `value` (a number) as the scalar of `tag`."""
    tb = require("sg.summary.scalar")
    return _serialized(tb.Summary(value=[tb.Summary.Value(tag=tag, simple_value=float(value))]))


@functools.lru_cache(maxsize=1)
def _tf1_buckets() -> np.ndarray:
    """TF1's default histogram bucket edges: +-1e-12 * 1.1**k up to 1e20, and 0."""
    positive = [1e-12]
    while positive[-1] * 1.1 < 1e20:
        positive.append(positive[-1] * 1.1)
    big = np.finfo(np.float64).max
    return np.array([-big] + [-v for v in reversed(positive)] + [0.0] + positive + [big])


def summary_histogram(tag, values):
    """A Summary holding the histogram of `values` for `tag`, in TF1's buckets (ValueError
    for NaN or infinity, in TF1's words)."""
    tb = require("sg.summary.histogram")
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(values)):
        raise ValueError(f"Nan in summary histogram for: {tag}")
    if values.size == 0:
        histo = tb.HistogramProto()
    else:
        histo = tb.make_histogram(values, _tf1_buckets())
    return _serialized(tb.Summary(value=[tb.Summary.Value(tag=tag, histo=histo)]))


def _as_uint8(images: np.ndarray) -> np.ndarray:
    """Float images scaled as TF1's image summary does: all non-negative, the largest value
    becomes 255; else 0.0 goes to 127 and the values are scaled to fit [0, 255]."""
    if images.dtype == np.uint8:
        return images
    x = images.astype(np.float64)
    finite = x[np.isfinite(x)]
    if finite.size == 0:
        return np.zeros(x.shape, np.uint8)
    lo, hi = finite.min(), finite.max()
    if lo >= 0:
        scale = 255.0 / hi if hi > 0 else 0.0
        offset = 0.0
    else:
        scale = min(127.0 / -lo, 128.0 / hi if hi > 0 else np.inf)
        offset = 127.0
    return np.clip(np.nan_to_num(x * scale + offset), 0, 255).astype(np.uint8)


def _png(image: np.ndarray) -> bytes:
    """The PNG file of one [height, width, channels] uint8 image, encoded by Pillow."""
    import io

    from PIL import Image  # (tensorboardX's own image dependency: in the extra)
    buffer = io.BytesIO()
    Image.fromarray(image[..., 0] if image.shape[-1] == 1 else image).save(buffer, "PNG")
    return buffer.getvalue()


def summary_image(tag, images, max_images):
    """A Summary holding the first `max_images` images of `images` ([batch, height, width,
    channels], channels 1, 3 or 4) as PNGs, tagged `tag/image/i` (`tag/image` for one), as
    TF1."""
    tb = require("sg.summary.image")
    images = _as_uint8(np.asarray(images))
    shown = images[:max_images]
    values = []
    for i, image in enumerate(shown):
        name = f"{tag}/image" if max_images == 1 else f"{tag}/image/{i}"
        height, width, channels = image.shape
        proto = tb.Summary.Image(height=height, width=width, colorspace=channels,
                                 encoded_image_string=_png(image))
        values.append(tb.Summary.Value(tag=name, image=proto))
    return _serialized(tb.Summary(value=values))


def summary_text(tag, strings):
    """A Summary holding `strings` (bytes, any shape) as the text of `tag`, for TensorBoard's
    text dashboard."""
    tb = require("sg.summary.text")
    strings = np.asarray(strings, dtype=object)
    metadata = tb.SummaryMetadata(plugin_data=tb.SummaryMetadata.PluginData(
        plugin_name="text", content=tb.TextPluginData(version=0).SerializeToString()))
    tensor = tb.TensorProto(
        dtype="DT_STRING", string_val=list(strings.reshape(-1)),
        tensor_shape=tb.TensorShapeProto(dim=[tb.TensorShapeProto.Dim(size=d)
                                              for d in strings.shape]))
    return _serialized(tb.Summary(value=[tb.Summary.Value(tag=tag, metadata=metadata,
                                                          tensor=tensor)]))


def merge_summary(*summaries):
    """One Summary holding the values of all of `summaries` (serialized Summaries, or string
    arrays of them); ValueError naming a tag that two of them share, as TF1."""
    tb = require("sg.summary.merge")
    merged, seen = tb.Summary(), set()
    for item in summaries:
        for text in np.asarray(item, dtype=object).reshape(-1):
            part = tb.Summary()
            part.ParseFromString(text)
            for value in part.value:
                if value.tag in seen:
                    raise ValueError(f"Duplicate tag {value.tag} found in summary inputs")
                seen.add(value.tag)
                merged.value.append(value)
    return _serialized(merged)
