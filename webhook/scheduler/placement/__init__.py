"""The scheduler's one public face: where would kube-scheduler put this pod?"""

from webhook.scheduler.placement.cycle import *  # noqa: F403 (the face, split next)
from webhook.scheduler.placement.cycle import __all__ as __all__
