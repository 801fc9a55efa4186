"""Verify: plan jobs from the content, run them in lane workers (cached), judge the results."""
