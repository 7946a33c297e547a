"""Makes a venv a layer over the series' ``.venv`` (``make`` writes ``.venv-course`` this way).

``make`` copies this file into the layer's site-packages, with ``SERIES`` set to ``.venv``, and a
``.pth`` file that imports it at start-up. The layer's own packages (nbgrader and what it adds)
come first on ``sys.path``, then every package of ``.venv`` with the series' pins; Jupyter finds
``.venv``'s data (nbconvert's templates, kernels, extensions) and configuration too, after its own.
Not part of the ``tools`` package's use at run time: a plain file, with no imports of the project.
"""

import os
import site
import sysconfig

SERIES = "@SERIES@"  # .venv's prefix, written in by make


def _layer() -> None:
    site.addsitedir(sysconfig.get_path("purelib", vars={"base": SERIES, "platbase": SERIES}))
    for variable, folder in (("JUPYTER_PATH", "share/jupyter"), ("JUPYTER_CONFIG_PATH", "etc/jupyter")):
        path = os.path.join(SERIES, folder)
        paths = [p for p in os.environ.get(variable, "").split(os.pathsep) if p]
        if path not in paths:  # a child process inherits the variable: add the folder once
            os.environ[variable] = os.pathsep.join([*paths, path])


if not SERIES.startswith("@"):
    _layer()
