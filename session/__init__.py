"""The method gpuopt encodes: models, steps and gates, and the code that conducts a session."""
