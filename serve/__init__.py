"""Serving the distilled student: `serve.client` (extract against any OpenAI-compatible endpoint),
`serve.vllm` (GPU: base model + LoRA adapters on vLLM), `serve.local` (CPU: base GGUF + GGUF LoRA on the
embedded llama.cpp server)."""
