"""`pyaten.sparse`, at `torch.sparse`'s path: the sparse-only operators (`mm`, `sum`,
`softmax`, `log_softmax`, `sampled_addmm`, `addmm`). The layouts themselves
(`pyaten.sparse_coo`, `sparse_csr`, ...) and the tensor model are in pyaten/core/sparse.py;
the kernels in pyaten/native/kernels/sparse*.py. See docs/sparse.md.
"""

from __future__ import annotations

__all__: list[str] = []
