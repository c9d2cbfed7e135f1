"""`SummaryWriter` and `FileWriter`: PyTorch's writer API over tensorboard's event files."""

from __future__ import annotations

import os
import socket
import time
from datetime import datetime
from typing import Any

from tensorboard.compat.proto.event_pb2 import Event, SessionLog
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from pyaten.utils.tensorboard import summary as _summary
from pyaten.utils.torch_api import MissingAttribute

__all__ = ["FileWriter", "SummaryWriter"]


class FileWriter:
    """Writes `Event` protocol buffers to one event file in `log_dir`."""

    def __init__(self, log_dir: str, max_queue: int = 10, flush_secs: int = 120,
                 filename_suffix: str = "") -> None:
        self.event_writer = EventFileWriter(str(log_dir), max_queue, flush_secs,
                                            filename_suffix)

    def get_logdir(self) -> str:
        return self.event_writer.get_logdir()

    def add_event(self, event: Event, step: Any = None, walltime: float | None = None) -> None:
        event.wall_time = time.time() if walltime is None else walltime
        if step is not None:
            event.step = int(step)
        self.event_writer.add_event(event)

    def add_summary(self, summary: Any, global_step: Any = None,
                    walltime: float | None = None) -> None:
        self.add_event(Event(summary=summary), global_step, walltime)

    def add_graph(self, graph_def: Any, walltime: float | None = None) -> None:
        self.add_event(Event(graph_def=graph_def.SerializeToString()), None, walltime)

    def flush(self) -> None:
        self.event_writer.flush()

    def close(self) -> None:
        self.event_writer.close()

    def reopen(self) -> None:
        self.event_writer.reopen()


class SummaryWriter:
    """Log scalars, histograms, images, text and the model graph for TensorBoard
    (`tensorboard --logdir runs`)."""

    def __init__(self, log_dir: str | None = None, comment: str = "",
                 purge_step: int | None = None, max_queue: int = 10, flush_secs: int = 120,
                 filename_suffix: str = "") -> None:
        if not log_dir:
            now = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", now + "_" + socket.gethostname() + comment)
        self.log_dir = str(log_dir)
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        self.file_writer: FileWriter | None = None
        self.all_writers: dict[str, FileWriter] = {}
        self.default_bins = _summary.default_bins()
        self._get_file_writer()

    def _get_file_writer(self) -> FileWriter:
        if self.file_writer is None:
            self.file_writer = FileWriter(self.log_dir, self.max_queue, self.flush_secs,
                                          self.filename_suffix)
            self.all_writers = {self.file_writer.get_logdir(): self.file_writer}
            if self.purge_step is not None:
                step = self.purge_step
                self.file_writer.add_event(Event(step=step, file_version="brain.Event:2"))
                self.file_writer.add_event(
                    Event(step=step, session_log=SessionLog(status=SessionLog.START)))
                self.purge_step = None
        return self.file_writer

    def get_logdir(self) -> str:
        return self.log_dir

    def add_scalar(self, tag: str, scalar_value: Any, global_step: Any = None,
                   walltime: float | None = None, new_style: bool = False,
                   double_precision: bool = False) -> None:
        self._get_file_writer().add_summary(
            _summary.scalar(tag, scalar_value, new_style, double_precision), global_step,
            walltime)

    def add_scalars(self, main_tag: str, tag_scalar_dict: dict, global_step: Any = None,
                    walltime: float | None = None) -> None:
        """Each scalar goes to its own run, `<log_dir>/<main_tag>_<tag>`."""
        walltime = time.time() if walltime is None else walltime
        base = self._get_file_writer().get_logdir()
        for tag, value in tag_scalar_dict.items():
            path = base + "/" + main_tag.replace("/", "_") + "_" + tag
            writer = self.all_writers.get(path)
            if writer is None:
                writer = FileWriter(path, self.max_queue, self.flush_secs,
                                    self.filename_suffix)
                self.all_writers[path] = writer
            writer.add_summary(_summary.scalar(main_tag, value), global_step, walltime)

    def add_histogram(self, tag: str, values: Any, global_step: Any = None,
                      bins: Any = "tensorflow", walltime: float | None = None,
                      max_bins: int | None = None) -> None:
        if isinstance(bins, str) and bins == "tensorflow":
            bins = self.default_bins
        self._get_file_writer().add_summary(
            _summary.histogram(tag, values, bins, max_bins=max_bins), global_step, walltime)

    def add_image(self, tag: str, img_tensor: Any, global_step: Any = None,
                  walltime: float | None = None, dataformats: str = "CHW") -> None:
        self._get_file_writer().add_summary(
            _summary.image(tag, img_tensor, dataformats=dataformats), global_step, walltime)

    def add_images(self, tag: str, img_tensor: Any, global_step: Any = None,
                   walltime: float | None = None, dataformats: str = "NCHW") -> None:
        self._get_file_writer().add_summary(
            _summary.image(tag, img_tensor, dataformats=dataformats), global_step, walltime)

    def add_text(self, tag: str, text_string: str, global_step: Any = None,
                 walltime: float | None = None) -> None:
        self._get_file_writer().add_summary(_summary.text(tag, text_string), global_step,
                                            walltime)

    def add_hparams(self, hparam_dict: dict, metric_dict: dict,
                    hparam_domain_discrete: dict | None = None, run_name: str | None = None,
                    global_step: Any = None) -> None:
        """Hyper-parameters and their metrics for the HParams tab, in the run
        `<log_dir>/<run_name>` (the time when not given)."""
        if type(hparam_dict) is not dict or type(metric_dict) is not dict:
            raise TypeError("hparam_dict and metric_dict should be dictionary.")
        experiment, start, end = _summary.hparams(hparam_dict, metric_dict,
                                                  hparam_domain_discrete)
        run_name = run_name or str(time.time())
        log_dir = os.path.join(self._get_file_writer().get_logdir(), run_name)
        with SummaryWriter(log_dir=log_dir) as run:
            for summary in (experiment, start, end):
                run._get_file_writer().add_summary(summary, global_step)
            for k, v in metric_dict.items():
                run.add_scalar(k, v, global_step)

    def add_graph(self, model: Any, input_to_model: Any = None, verbose: bool = False,
                  use_strict_trace: bool = True) -> None:
        """The graph of one `model(input_to_model)` call (pyaten/utils/tensorboard/graph.py)."""
        from pyaten.utils.tensorboard.graph import graph

        if input_to_model is None:
            args: tuple = ()
        elif isinstance(input_to_model, (list, tuple)):
            args = tuple(input_to_model)
        else:
            args = (input_to_model,)
        self._get_file_writer().add_graph(graph(model, args))

    def flush(self) -> None:
        for writer in self.all_writers.values():
            writer.flush()

    def close(self) -> None:
        for writer in self.all_writers.values():
            writer.flush()
            writer.close()
        self.file_writer = None
        self.all_writers = {}

    def __enter__(self) -> SummaryWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# PyTorch's writer methods pyaten's lacks: reading one raises the coverage pointer.
_NOT_YET = (
    "add_audio", "add_custom_scalars", "add_custom_scalars_marginchart",
    "add_custom_scalars_multilinechart", "add_embedding", "add_figure", "add_histogram_raw",
    "add_image_with_boxes", "add_mesh", "add_onnx_graph", "add_pr_curve",
    "add_pr_curve_raw", "add_tensor", "add_video",
)
for _name in _NOT_YET:
    setattr(SummaryWriter, _name,
            MissingAttribute(f"torch.utils.tensorboard.SummaryWriter.{_name}"))
