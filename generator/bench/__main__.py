"""`python -m generator.bench`: the framework benchmarks (make bench); see frameworks.py."""

import sys

from generator.bench.frameworks import main

sys.exit(main())
