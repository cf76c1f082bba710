"""LLM access: the contract (`types`), the async client (`client`), and the embedded offline backend (`local`)."""
from ie.llm.local import LocalServer, ModelError, ensure_endpoint, load_catalogue, model_path, resolve_model

__all__ = ["LocalServer", "ModelError", "ensure_endpoint", "load_catalogue", "model_path", "resolve_model"]
