"""pyaten.core: tensors and what kernels are built on.

Storage, Tensor, dtypes, devices, type promotion, TensorIterator, DispatchStub, generators,
printing and interop (NumPy, DLPack). Knows no particular op.

`__all__` is what `pyaten` re-exports at the top level (torch's public names); kernel-side
names (TensorIterator, DispatchStub, empty_tensor, ...) are imported from `pyaten.core`
or its modules.
"""

from pyaten.core import dtypes as _dtypes
from pyaten.core.creation import as_tensor, asarray, from_numpy, scalar_tensor, tensor
from pyaten.core.device import device
from pyaten.core.dtypes import *  # noqa: F403 - the dtypes and the default dtype, as `__all__` lists
from pyaten.core.generator import (
    Generator,
    default_generator,
    get_rng_state,
    initial_seed,
    manual_seed,
    seed,
    set_rng_state,
)
from pyaten.core.interop import from_dlpack
from pyaten.core.iterator import TensorIterator as TensorIterator
from pyaten.core.iterator import TensorIteratorConfig as TensorIteratorConfig
from pyaten.core.iterator import broadcast_shapes
from pyaten.core.printing import get_printoptions, set_printoptions
from pyaten.core.promotion import can_cast, promote_types, result_type
from pyaten.core.storage import Storage
from pyaten.core.stub import DispatchStub as DispatchStub
from pyaten.core.tensor import (
    Size,
    Tensor,
    channels_last,
    channels_last_3d,
    contiguous_format,
    preserve_format,
    strided,
)

__all__ = [
    "Tensor",
    "Size",
    "Storage",
    "tensor",
    "as_tensor",
    "asarray",
    "from_numpy",
    "scalar_tensor",
    "device",
    *_dtypes.__all__,
    "result_type",
    "promote_types",
    "can_cast",
    "strided",
    "contiguous_format",
    "channels_last",
    "channels_last_3d",
    "preserve_format",
    "broadcast_shapes",
    "Generator",
    "default_generator",
    "manual_seed",
    "seed",
    "initial_seed",
    "get_rng_state",
    "set_rng_state",
    "from_dlpack",
    "set_printoptions",
    "get_printoptions",
    "is_tensor",
]


def is_tensor(obj: object) -> bool:
    """True for pyaten tensors (and subclasses)."""
    return isinstance(obj, Tensor)
