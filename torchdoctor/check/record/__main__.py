"""`python -m torchdoctor.check.record > torchdoctor/schema/facts.schema.json` regenerates the
published facts schema from the record's classes."""

import json
import sys

from . import facts_schema

sys.stdout.write(json.dumps(facts_schema(), indent=2) + "\n")
