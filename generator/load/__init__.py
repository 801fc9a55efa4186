"""Load: the YAML content, checked, into Sheets, guide pages and facts (file:line on every error)."""
