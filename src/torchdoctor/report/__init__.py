"""Renderers: each draws a Record (or a value derived from one) for people or machines."""
