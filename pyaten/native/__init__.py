"""pyaten.native: the operators themselves.

- `native_functions.yaml`: the declarations (PyTorch's format);
- `kernels/`: the `@native` kernels by family (`registry.native` records them by name);
- `loader`: generates (via `pyaten.codegen`), caches, registers and attaches the API at import;
- `arg_parser`, `gen_support`, `structured`, `runtime`, `tensor_api`: what generated code runs
  on: argument parsing, structured meta objects, Tensor properties and composite operators.
See docs/codegen.md and docs/operators.md.
"""
