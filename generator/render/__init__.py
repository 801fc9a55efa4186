"""Render: HTML pages, data exports and reader features from Sheets and their Verification."""
