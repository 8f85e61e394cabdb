"""`python -m webhook.cli`: the topospread command line."""

import sys

from webhook.cli.main import main

sys.exit(main())
