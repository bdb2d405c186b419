"""The in-pod snippet executor: runs one Python snippet per pod (`python3 -m sandbox_executor`)."""
