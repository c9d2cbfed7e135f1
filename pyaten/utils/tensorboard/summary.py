"""The Summary protocol buffers PyTorch's tensorboard writer makes, from pyaten tensors:
the same fields and values (histogram buckets, PNG images, text plugin data)."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData

from pyaten.core.tensor import Tensor


def make_np(value: Any) -> np.ndarray:
    """A tensor, NumPy array or Python number as a NumPy array."""
    if isinstance(value, Tensor):
        return value.detach().numpy()
    if isinstance(value, np.ndarray):
        return value
    if np.isscalar(value):
        return np.array([value])
    raise NotImplementedError(
        f"Got {type(value)}, but numpy array or torch tensor are expected."
    )


def scalar(name: str, value: Any, new_style: bool = False,
           double_precision: bool = False) -> Summary:
    array = make_np(value).squeeze()
    if array.ndim != 0:
        raise AssertionError(
            f"Tensor should contain one element (0 dimensions). Was given size: {array.size} "
            f"and {array.ndim} dimensions."
        )
    number = float(array)
    if not new_style:
        return Summary(value=[Summary.Value(tag=name, simple_value=number)])
    proto = (TensorProto(double_val=[number], dtype="DT_DOUBLE") if double_precision
             else TensorProto(float_val=[number], dtype="DT_FLOAT"))
    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="scalars"))
    return Summary(value=[Summary.Value(tag=name, tensor=proto, metadata=metadata)])


def default_bins() -> list[float]:
    """TensorFlow's histogram edges: +-1e-12 growing by 10% up to 1e20, and 0."""
    edges, v = [], 1e-12
    while v < 1e20:
        edges.append(v)
        v *= 1.1
    return [-e for e in reversed(edges)] + [0] + edges


def make_histogram(values: np.ndarray, bins: Any, max_bins: int | None = None) -> HistogramProto:
    if values.size == 0:
        raise ValueError("The input has no element.")
    values = values.reshape(-1)
    counts, limits = np.histogram(values, bins=bins)
    if max_bins is not None and len(counts) > max_bins:  # merge neighbouring buckets
        group = len(counts) // max_bins
        if len(counts) % group:
            counts = np.pad(counts, (0, group - len(counts) % group))
        counts = counts.reshape(-1, group).sum(axis=-1)
        limits = np.concatenate([limits[:-1:group], limits[-1:]])
    # keep the buckets from the first to the last non-empty one, plus an empty one on the
    # left (TensorBoard reads only right edges)
    filled = np.cumsum(np.greater(counts, 0))
    start, end = np.searchsorted(filled, [0, filled[-1] - 1], side="right")
    start, end = int(start), int(end) + 1
    counts = counts[start - 1 : end] if start > 0 else np.concatenate([[0], counts[:end]])
    limits = limits[start : end + 1]
    if counts.size == 0 or limits.size == 0:
        raise ValueError("The histogram is empty, please file a bug report.")
    return HistogramProto(
        min=values.min(), max=values.max(), num=len(values), sum=values.sum(),
        sum_squares=values.dot(values), bucket_limit=limits.tolist(), bucket=counts.tolist(),
    )


def histogram(name: str, values: Any, bins: Any, max_bins: int | None = None) -> Summary:
    histo = make_histogram(make_np(values).astype(float), bins, max_bins)
    return Summary(value=[Summary.Value(tag=name, histo=histo)])


def make_grid(images: np.ndarray, ncols: int = 8) -> np.ndarray:
    """N images (N1HW or N3HW) tiled into one 3HW canvas, `ncols` per row."""
    if images.shape[1] == 1:
        images = np.concatenate([images] * 3, 1)
    if images.ndim != 4 or images.shape[1] != 3:
        raise AssertionError("Input should be a 4D numpy array with 3 channels")
    n, _, h, w = images.shape
    ncols = min(n, ncols)
    nrows = -(-n // ncols)
    canvas = np.zeros((3, h * nrows, w * ncols), dtype=images.dtype)
    for i in range(n):
        y, x = divmod(i, ncols)
        canvas[:, y * h : (y + 1) * h, x * w : (x + 1) * w] = images[i]
    return canvas


def convert_to_hwc(array: np.ndarray, dataformats: str) -> np.ndarray:
    if len(set(dataformats)) != len(dataformats):
        raise AssertionError(
            f"You can not use the same dimension shorthand twice. input_format: {dataformats}"
        )
    if array.ndim != len(dataformats):
        raise AssertionError(
            "size of input tensor and input format are different. tensor shape: "
            f"{array.shape}, input_format: {dataformats}"
        )
    dataformats = dataformats.upper()
    if len(dataformats) == 4:
        nchw = array.transpose([dataformats.find(c) for c in "NCHW"])
        return make_grid(nchw).transpose(1, 2, 0)
    if len(dataformats) == 3:
        hwc = array.transpose([dataformats.find(c) for c in "HWC"])
        return np.concatenate([hwc] * 3, 2) if hwc.shape[2] == 1 else hwc
    hw = array.transpose([dataformats.find(c) for c in "HW"])
    return np.stack([hw] * 3, 2)


def image(tag: str, img: Any, rescale: float = 1, dataformats: str = "NCHW") -> Summary:
    """A PNG image summary: float images in [0, 1] scaled by 255, uint8 as they are."""
    from PIL import Image

    array = convert_to_hwc(make_np(img), dataformats)
    scale = 1 if array.dtype == np.uint8 else 255
    array = (array.astype(np.float32) * scale).clip(0, 255).astype(np.uint8)
    height, width, channels = array.shape
    picture = Image.fromarray(array).resize(
        (int(width * rescale), int(height * rescale)), Image.Resampling.LANCZOS
    )
    buffer = io.BytesIO()
    picture.save(buffer, format="PNG")
    encoded = Summary.Image(height=height, width=width, colorspace=channels,
                            encoded_image_string=buffer.getvalue())
    return Summary(value=[Summary.Value(tag=tag, image=encoded)])


def text(tag: str, text_string: str) -> Summary:
    plugin = SummaryMetadata.PluginData(
        plugin_name="text", content=TextPluginData(version=0).SerializeToString()
    )
    proto = TensorProto(
        dtype="DT_STRING", string_val=[text_string.encode(encoding="utf_8")],
        tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)]),
    )
    return Summary(value=[Summary.Value(
        tag=tag + "/text_summary", metadata=SummaryMetadata(plugin_data=plugin), tensor=proto
    )])


def hparams(hparam_dict: dict, metric_dict: dict,
            hparam_domain_discrete: dict | None = None) -> tuple[Summary, Summary, Summary]:
    """The HParams plugin's three summaries: the experiment (names and types of the
    hyper-parameters and metrics), the session start (their values), the session end."""
    from google.protobuf import struct_pb2
    from tensorboard.plugins.hparams.api_pb2 import (
        DataType,
        Experiment,
        HParamInfo,
        MetricInfo,
        MetricName,
        Status,
    )
    from tensorboard.plugins.hparams.metadata import (
        EXPERIMENT_TAG,
        PLUGIN_DATA_VERSION,
        PLUGIN_NAME,
        SESSION_END_INFO_TAG,
        SESSION_START_INFO_TAG,
    )
    from tensorboard.plugins.hparams.plugin_data_pb2 import (
        HParamsPluginData,
        SessionEndInfo,
        SessionStartInfo,
    )

    if not isinstance(hparam_dict, dict):
        raise TypeError("parameter: hparam_dict should be a dictionary, nothing logged.")
    if not isinstance(metric_dict, dict):
        raise TypeError("parameter: metric_dict should be a dictionary, nothing logged.")
    hparam_domain_discrete = hparam_domain_discrete or {}
    if not isinstance(hparam_domain_discrete, dict):
        raise TypeError(
            "parameter: hparam_domain_discrete should be a dictionary, nothing logged."
        )
    for k, v in hparam_domain_discrete.items():
        if k not in hparam_dict or not isinstance(v, list) or not all(
            isinstance(d, type(hparam_dict[k])) for d in v
        ):
            raise TypeError(
                f"parameter: hparam_domain_discrete[{k}] should be a list of same type as "
                f"hparam_dict[{k}]."
            )

    def domain(k: str, field: str) -> Any:
        if k not in hparam_domain_discrete:
            return None
        return struct_pb2.ListValue(
            values=[struct_pb2.Value(**{field: d}) for d in hparam_domain_discrete[k]]
        )

    infos = []
    start = SessionStartInfo()
    for k, v in hparam_dict.items():
        if v is None:
            continue
        # the order PyTorch tests types in: a bool is an int, so it is a number
        if isinstance(v, (int, float)):
            start.hparams[k].number_value = v
            kind, field = "DATA_TYPE_FLOAT64", "number_value"
        elif isinstance(v, str):
            start.hparams[k].string_value = v
            kind, field = "DATA_TYPE_STRING", "string_value"
        elif isinstance(v, Tensor):
            start.hparams[k].number_value = make_np(v)[0]
            infos.append(HParamInfo(name=k, type=DataType.Value("DATA_TYPE_FLOAT64")))
            continue
        else:
            raise ValueError("value should be one of int, float, str, bool, or torch.Tensor")
        infos.append(HParamInfo(name=k, type=DataType.Value(kind),
                                domain_discrete=domain(k, field)))

    def plugin_summary(tag: str, **content: Any) -> Summary:
        data = HParamsPluginData(version=PLUGIN_DATA_VERSION, **content)
        metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(
            plugin_name=PLUGIN_NAME, content=data.SerializeToString()))
        return Summary(value=[Summary.Value(tag=tag, metadata=metadata)])

    experiment = Experiment(
        hparam_infos=infos, metric_infos=[MetricInfo(name=MetricName(tag=k)) for k in metric_dict]
    )
    return (
        plugin_summary(EXPERIMENT_TAG, experiment=experiment),
        plugin_summary(SESSION_START_INFO_TAG, session_start_info=start),
        plugin_summary(SESSION_END_INFO_TAG,
                       session_end_info=SessionEndInfo(status=Status.Value("STATUS_SUCCESS"))),
    )
