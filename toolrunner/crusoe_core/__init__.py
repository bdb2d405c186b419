"""Platform plumbing shared by agent-side code (see adapter.py)."""
