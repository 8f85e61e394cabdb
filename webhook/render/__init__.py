"""Rendering: the HTML kit and the pages `audit` and `simulate` share (pure, JSON in)."""
