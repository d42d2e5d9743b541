"""setup.py: the build step of `pip install .` (pyproject.toml holds the metadata). The package
is pure Python; what this adds is tide/_install.py, naming the libtide.so the installed package
loads, chosen when the package is built:

1. $TIDE_LIBRARY, when set;
2. this repository's meson build, build/libtide.so;
3. the library `meson install` put where pkg-config finds `tide` (its libdir).

None found: the build stops and says so. At import $TIDE_LIBRARY still overrides the path
written in. setuptools' own outputs go to build-pip/ (its default, build/, is meson's: a
build/ that is not a meson build tree would stop tools/setup)."""
import os
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


def find_library():
    """The absolute path of the libtide.so to record, and where it was found."""
    env = os.environ.get("TIDE_LIBRARY")
    if env:
        return os.path.abspath(env), "$TIDE_LIBRARY"
    built = os.path.join(HERE, "build", "libtide.so")
    if os.path.exists(built):
        return built, "the meson build in build/"
    try:
        libdir = subprocess.run(["pkg-config", "--variable=libdir", "tide"], check=True,
                                capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        libdir = ""
    installed = os.path.join(libdir, "libtide.so") if libdir else ""
    if installed and os.path.exists(installed):
        return installed, "pkg-config tide"
    raise SystemExit("tide: no libtide.so to install the package for: build it first "
                     "(tools/setup, or meson setup build && ninja -C build), install it "
                     "(meson install -C build), or name it in TIDE_LIBRARY")


class BuildPy(build_py):
    """build_py, writing tide/_install.py with the library's path."""

    def run(self):
        super().run()
        path, where = find_library()
        print(f"tide: the package will load {path} (found through {where})")
        target = os.path.join(self.build_lib, "tide", "_install.py")
        with open(target, "w") as f:
            f.write('"""Written by pip install: where libtide.so is."""\n'
                    f"LIBRARY = {path!r}\n")


os.makedirs(os.path.join(HERE, "build-pip"), exist_ok=True)
setup(packages=["tide"], package_dir={"": "python"}, cmdclass={"build_py": BuildPy},
      options={"build": {"build_base": "build-pip"}, "egg_info": {"egg_base": "build-pip"}})
