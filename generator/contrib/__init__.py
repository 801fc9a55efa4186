"""Contributor tools: new-row, changed rows, coverage, the local server."""
