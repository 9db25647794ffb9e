"""The former name of :mod:`kjoin_viz.course`, which now owns every table of the course.

Kept so that notebooks written against it still run; it defines nothing of its own.
"""

from .course import *  # noqa: F401,F403
from .course import __all__  # noqa: F401
