"""pyaten.utils.tensorboard.SummaryWriter against torch.utils.tensorboard: the event files
both write read back the same through TensorBoard's own reader (scalars, histograms, images,
text, the graph's operators and edges). Skipped without the `tensorboard` package."""

from __future__ import annotations

import io
import os
import warnings

import numpy as np
import pytest

pytest.importorskip("tensorboard")
pytest.importorskip("PIL")

import torch  # noqa: E402
from PIL import Image  # noqa: E402
from tensorboard.backend.event_processing.event_accumulator import (  # noqa: E402
    EventAccumulator,
)

import pyaten  # noqa: E402


def _write(m, log_dir) -> None:
    if m is torch:
        from torch.utils.tensorboard import SummaryWriter
    else:
        from pyaten.utils.tensorboard import SummaryWriter
    with SummaryWriter(log_dir) as w:
        for i in range(3):
            w.add_scalar("loss", 1.0 / (i + 1), i)
        w.add_scalar("tensor_value", m.tensor(2.5), 3, new_style=True)
        w.add_scalars("run", {"a": 1.0, "b": 2.0}, 0)
        w.add_histogram("h", m.arange(-20.0, 30.0) / 10, 0)
        w.add_histogram("h_auto", m.arange(10.0), 1, bins="auto")
        w.add_histogram("h_few", m.arange(100.0), 2, bins=50, max_bins=7)
        w.add_image("img", m.arange(60.0).reshape(3, 4, 5) / 60, 0)
        w.add_image("hw", m.arange(20, dtype=m.uint8).reshape(4, 5) * 10, 0, dataformats="HW")
        w.add_images("imgs", m.arange(40.0).reshape(2, 1, 4, 5) / 40, 0)
        w.add_text("note", "hello **world**", 0)
        m.manual_seed(0)
        model = m.nn.Sequential(m.nn.Linear(3, 4), m.nn.ReLU(), m.nn.Linear(4, 2))
        w.add_graph(model, m.ones(1, 3))


def _read(log_dir) -> EventAccumulator:
    ea = EventAccumulator(log_dir, size_guidance={"tensors": 0, "images": 0})
    ea.Reload()
    return ea


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    ours, theirs = tmp_path_factory.mktemp("ours"), tmp_path_factory.mktemp("theirs")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _write(pyaten, str(ours))
        _write(torch, str(theirs))
    return (ours, _read(str(ours))), (theirs, _read(str(theirs)))


def test_tags(both) -> None:
    (_, ours), (_, theirs) = both
    tags_o, tags_t = ours.Tags(), theirs.Tags()
    tags_t.pop("run_metadata"), tags_o.pop("run_metadata")  # torch's JIT step stats
    assert tags_o == tags_t


def test_scalars_and_add_scalars(both) -> None:
    (dir_o, ours), (dir_t, theirs) = both
    assert [(e.step, e.value) for e in ours.Scalars("loss")] == [
        (e.step, e.value) for e in theirs.Scalars("loss")]
    assert ours.Tensors("tensor_value")[0].tensor_proto == theirs.Tensors(
        "tensor_value")[0].tensor_proto
    runs_o = sorted(n for n in os.listdir(dir_o) if not n.startswith("events"))
    assert runs_o == sorted(n for n in os.listdir(dir_t) if not n.startswith("events"))
    assert runs_o == ["run_a", "run_b"]
    for tag in ("run_a", "run_b"):
        sub_o, sub_t = _read(str(dir_o / tag)), _read(str(dir_t / tag))
        assert [e.value for e in sub_o.Scalars("run")] == [e.value for e in sub_t.Scalars("run")]


@pytest.mark.parametrize("tag", ["h", "h_auto", "h_few"])
def test_histograms(both, tag) -> None:
    (_, ours), (_, theirs) = both
    assert ours.Histograms(tag)[0].histogram_value == theirs.Histograms(tag)[0].histogram_value


@pytest.mark.parametrize("tag", ["img", "hw", "imgs"])
def test_images(both, tag) -> None:
    (_, ours), (_, theirs) = both
    a, b = ours.Images(tag)[0], theirs.Images(tag)[0]
    assert (a.width, a.height) == (b.width, b.height)
    pixels_a = np.asarray(Image.open(io.BytesIO(a.encoded_image_string)))
    pixels_b = np.asarray(Image.open(io.BytesIO(b.encoded_image_string)))
    np.testing.assert_array_equal(pixels_a, pixels_b)


def test_text(both) -> None:
    (_, ours), (_, theirs) = both
    assert ours.Tensors("note/text_summary")[0].tensor_proto == theirs.Tensors(
        "note/text_summary")[0].tensor_proto
    assert ours.summary_metadata["note/text_summary"] == theirs.summary_metadata[
        "note/text_summary"]


def test_graph_has_torchs_operators_and_edges(both) -> None:
    (_, ours), (_, theirs) = both

    def shape(graph):
        by_name = {n.name: n for n in graph.node}
        ops = sorted((n.op, sorted(by_name[i].op for i in n.input if i in by_name))
                     for n in graph.node)
        return ops

    assert shape(ours.Graph()) == shape(theirs.Graph())
    # module scopes as PyTorch names them
    assert any(n.name.startswith("Sequential/Linear[2]/") for n in ours.Graph().node)


def test_default_log_dir_and_errors(tmp_path, monkeypatch) -> None:
    from pyaten.utils.tensorboard import SummaryWriter

    monkeypatch.chdir(tmp_path)
    with SummaryWriter(comment="_exp") as w:
        assert w.get_logdir().startswith("runs" + os.sep) and w.get_logdir().endswith("_exp")
        with pytest.raises(AssertionError, match="Tensor should contain one element"):
            w.add_scalar("x", pyaten.ones(2))
        with pytest.raises(ValueError, match="The input has no element"):
            w.add_histogram("x", pyaten.ones(0))


def test_methods_not_yet_written_name_the_pointer(tmp_path) -> None:
    from pyaten.utils.tensorboard import SummaryWriter

    with SummaryWriter(str(tmp_path)) as w:
        assert not hasattr(w, "add_embedding")
        with pytest.raises(AttributeError, match="pyaten does not implement "
                           "torch.utils.tensorboard.SummaryWriter.add_embedding yet"):
            w.add_embedding(pyaten.ones(2, 2))


def test_hparams(tmp_path) -> None:
    def write(m, log_dir):
        if m is torch:
            from torch.utils.tensorboard import SummaryWriter
        else:
            from pyaten.utils.tensorboard import SummaryWriter
        with SummaryWriter(log_dir) as w:
            w.add_hparams({"lr": 0.1, "layers": 3, "opt": "adam", "bn": True, "t": m.tensor([2.0]),
                           "skip": None},
                          {"hparam/acc": 0.9}, hparam_domain_discrete={"opt": ["adam", "sgd"]},
                          run_name="trial", global_step=4)
        return _read(os.path.join(log_dir, "trial"))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = write(pyaten, str(tmp_path / "ours"))
        theirs = write(torch, str(tmp_path / "theirs"))
    assert ours.PluginTagToContent("hparams") == theirs.PluginTagToContent("hparams")
    assert [(e.step, e.value) for e in ours.Scalars("hparam/acc")] == [
        (e.step, e.value) for e in theirs.Scalars("hparam/acc")]
    for bad in ({"x": [1]}, ):
        with pytest.raises(ValueError) as a:
            from pyaten.utils.tensorboard import SummaryWriter
            SummaryWriter(str(tmp_path / "bad")).add_hparams(bad, {})
        with pytest.raises(ValueError) as b:
            from torch.utils.tensorboard import SummaryWriter as TorchWriter
            TorchWriter(str(tmp_path / "bad_t")).add_hparams(bad, {})
        assert str(a.value) == str(b.value)
