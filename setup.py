"""Build of the optional compiled accelerator (pyaten/core/accel.py, Note: the accelerator).

Everything else is declared in pyproject.toml. The extension is optional: where there is no C
compiler, no Python headers or no NumPy at build time, the install goes on without it and
pyaten runs its pure-Python path.
"""

from setuptools import Extension, setup


def _extensions() -> list[Extension]:
    try:
        import numpy
    except ImportError:  # no NumPy headers: the pure-Python path
        return []
    return [
        Extension(
            "pyaten._accel",
            ["csrc/accel.c"],
            include_dirs=[numpy.get_include()],
            optional=True,
        )
    ]


setup(ext_modules=_extensions())
