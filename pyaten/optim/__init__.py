"""pyaten.optim: PyTorch's optimizers and learning-rate schedulers (docs/optim.md).

`pyaten.optim.SGD(params, lr=0.1, momentum=0.9)`, `opt.step()`, `opt.zero_grad()`,
`pyaten.optim.lr_scheduler.StepLR(opt, step_size=10)`: PyTorch's names, options, state
layout and (single-tensor, `foreach=False`) update formulas.
"""

from pyaten.optim import lr_scheduler
from pyaten.optim.adadelta import Adadelta
from pyaten.optim.adagrad import Adagrad
from pyaten.optim.adam import Adam, AdamW
from pyaten.optim.adamax import Adamax
from pyaten.optim.lbfgs import LBFGS
from pyaten.optim.nadam import NAdam
from pyaten.optim.optimizer import Optimizer
from pyaten.optim.radam import RAdam
from pyaten.optim.rmsprop import RMSprop
from pyaten.optim.sgd import SGD

__all__ = [
    "Adadelta",
    "Adagrad",
    "Adam",
    "AdamW",
    "Adamax",
    "LBFGS",
    "NAdam",
    "Optimizer",
    "RAdam",
    "RMSprop",
    "SGD",
    "lr_scheduler",
]


def __getattr__(name: str) -> object:
    """`pyaten.optim.swa_utils` loads on first use (it imports `nn`)."""
    if name == "swa_utils":
        import importlib

        return importlib.import_module("pyaten.optim.swa_utils")
    raise AttributeError(f"module 'pyaten.optim' has no attribute '{name}'", name=name)
