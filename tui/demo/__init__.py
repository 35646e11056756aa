"""The demo: a small PyTorch softmax repository with variant commits, and its session."""
