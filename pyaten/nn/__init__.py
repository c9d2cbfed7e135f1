"""pyaten.nn: neural-network building blocks on top of the operators and autograd.

`pyaten.nn.functional` holds the functions (docs/nn-functional.md). Modules, optimizers and
data loading come with issue 21.
"""

from pyaten.nn import functional  # noqa: F401
