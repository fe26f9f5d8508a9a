"""The model-backed example agents against a scripted model server (see test_model_agents.py)."""
