import sys

from local_runtime.cli import main

sys.exit(main())
