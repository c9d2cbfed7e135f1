"""What `import pyaten` loads (issue 36: import time): heavy modules wait for first use.

Each check runs a fresh interpreter (the test process has imported everything already)
under a hard timeout, and then checks that first use still works.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# Modules `import pyaten` does not load: each is loaded by the feature that needs it.
DEFERRED = [
    "yaml",  # declarations files: read by the CLI, codegen and manifests, not at import
    "pyaten.declarations",
    "pyaten.backends.manifest",  # a plug-in device's manifest (docs/backends.md)
    "pyaten.codegen.gen_backend",
    "numba",  # compiled kernels, on their first call
    "scipy.sparse",  # the first SciPy sparse product
]


def _run(code: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def loaded() -> dict:
    return _run(
        "import json, sys, pyaten; "
        f"print(json.dumps({{m: m in sys.modules for m in {DEFERRED!r}}}))"
    )


@pytest.mark.parametrize("module", DEFERRED)
def test_not_loaded_by_import(loaded: dict, module: str) -> None:
    assert loaded[module] is False, f"'import pyaten' loads {module}"


def test_manifest_autocast_still_reaches_amp() -> None:
    # The manifest module imports pyaten.amp's hook when a manifest asks for autocast; after
    # 'import pyaten' the hook is the one pyaten.amp exports.
    got = _run(
        "import json, sys, pyaten; import pyaten.backends.manifest as m; "
        "from pyaten.amp.autocast_mode import register_autocast_device as r; "
        "print(json.dumps({'amp': 'pyaten.amp' in sys.modules, 'yaml': 'yaml' in sys.modules,"
        " 'hook': callable(r)}))"
    )
    assert got == {"amp": True, "yaml": True, "hook": True}


def test_unknown_operator_hint_without_preloaded_declarations() -> None:
    # required.aten_operator's did-you-mean reads pyaten.declarations only when it is needed.
    got = _run(
        "import json, pyaten\n"
        "from pyaten.backends.required import aten_operator\n"
        "try:\n"
        "    aten_operator('ad.Tensor', 'register_kernel')\n"
        "except ValueError as e:\n"
        "    print(json.dumps({'msg': str(e)}))\n"
    )
    assert "unknown operator 'aten::ad.Tensor'" in got["msg"]
    assert "add.Tensor" in got["msg"]


def test_nested_autograd_kernels_registered_at_import() -> None:
    # The AutogradNestedTensor kernels are registered by 'import pyaten' (their dense op is
    # looked up on first call), so dispatch tables list them as before.
    got = _run(
        "import json, pyaten\n"
        "from pyaten.dispatch.registry import get_operator\n"
        "from pyaten.dispatch.keys import DispatchKey\n"
        "k = get_operator('aten::sin').kernels.get(DispatchKey.AutogradNestedTensor)\n"
        "print(json.dumps({'has': bool(k)}))\n"
    )
    assert got == {"has": True}


def test_nested_gradient_after_lazy_lookup() -> None:
    # The first differentiable call looks the dense op up; gradients match PyTorch's.
    import torch

    import pyaten

    got, want = [], []
    for lib, out in ((pyaten, got), (torch, want)):
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        b = lib.tensor([3.0], requires_grad=True)
        parts = lib.nested.as_nested_tensor([a, b]).sin().unbind()
        (parts[0].sum() + parts[1].sum()).backward()
        out.extend([*a.grad.tolist(), *b.grad.tolist()])
    assert got == pytest.approx(want)


def test_functional_checked_forms_built_on_first_lookup() -> None:
    # 'import pyaten' builds no checked form; the first lookup builds one and keeps it.
    got = _run(
        "import json, pyaten\n"
        "F = pyaten.nn.functional\n"
        "before = 'relu' in vars(F)\n"
        "first = F.relu\n"
        "from pyaten.nn.functional import relu\n"
        "print(json.dumps({'before': before, 'after': 'relu' in vars(F), 'same': first is relu,"
        " 'wrapped': hasattr(first, '__wrapped__'), 'listed': 'relu' in dir(F)}))\n"
    )
    assert got == {"before": False, "after": True, "same": True, "wrapped": True, "listed": True}


def test_functional_torch_function_and_star_import() -> None:
    import pyaten
    import pyaten.nn.functional as F

    seen = []

    class Sub(pyaten.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN206
            seen.append(func.__name__)
            return "handled"

    x = pyaten.zeros(2).as_subclass(Sub)
    assert F.hardtanh(x) == "handled"
    assert seen[0] == "hardtanh"
    namespace: dict = {}
    exec("from pyaten.nn.functional import *", namespace)  # noqa: S102
    assert set(F.__all__) <= set(namespace)
    assert namespace["hardtanh"] is F.hardtanh
    with pytest.raises(AttributeError, match="module 'pyaten.nn.functional' has no attribute"):
        F.not_a_function  # noqa: B018


@pytest.mark.parametrize("enabled", [True, False])
def test_import_leaves_the_garbage_collector_as_it_found_it(enabled: bool) -> None:
    # `import pyaten` pauses cyclic collection while it loads (docs/performance.md, "Import").
    got = _run(
        "import gc, json\n"
        f"{'gc.enable()' if enabled else 'gc.disable()'}\n"
        "import pyaten\n"
        "print(json.dumps({'enabled': gc.isenabled()}))\n"
    )
    assert got == {"enabled": enabled}
