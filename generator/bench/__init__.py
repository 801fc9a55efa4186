"""Benchmarks: the framework speed claims, measured; and the verification engine's own speed."""
