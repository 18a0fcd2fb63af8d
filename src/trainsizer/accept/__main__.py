"""`python -m trainsizer.accept`: the same command as `trainsizer accept`."""

import sys

from trainsizer.accept.command import main

sys.exit(main())
