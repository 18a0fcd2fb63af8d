import sys

from trainsizer.cli import main

sys.exit(main())
