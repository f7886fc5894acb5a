"""Model providers: HTTP clients for OpenAI-compatible, Anthropic and Ollama servers."""
