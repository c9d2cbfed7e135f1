"""pyaten.codegen: pure functions from declarations to Python source.

- `python_signature`: the Python face of schemas (PythonSignature, overload order);
- `gen_bindings`: binding functions with fast paths, Python operators;
- `fast_path_rules`: when a binding fast path may accept a call (what keeps it equal to the
  argument parser);
- `gen_native`: structured wrappers, autogen kernels, registrations, the whole module
  (`pyaten.codegen.gen_native.generate`; not imported here: it reads the typed declaration
  records, and a cached `import pyaten` runs without the declarations package);
- `naming`: names of generated things.
See docs/codegen.md.
"""

from pyaten.codegen.python_signature import PythonSignature, group_signatures

__all__ = ["PythonSignature", "group_signatures"]
