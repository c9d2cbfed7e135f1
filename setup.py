"""Build of the optional compiled accelerators (pyaten/core/accel.py, Note: the accelerator;
pyaten/autograd/accel_graph.py, Note: the compiled recording calls).

Everything else is declared in pyproject.toml. The extensions are optional: where there is no
C compiler, no Python headers or (for pyaten._accel) no NumPy at build time, the install goes
on without them and pyaten runs its pure-Python path.
"""

from setuptools import Extension, setup


def _extensions() -> list[Extension]:
    # the recording calls of the autograd kernels need only the Python headers
    graph = Extension("pyaten._accel_graph", ["csrc/accel_graph.c"], optional=True)
    try:
        import numpy
    except ImportError:  # no NumPy headers: pyaten._accel stays pure Python
        return [graph]
    return [
        Extension(
            "pyaten._accel",
            ["csrc/accel.c"],
            include_dirs=[numpy.get_include()],
            optional=True,
        ),
        graph,
    ]


setup(ext_modules=_extensions())
