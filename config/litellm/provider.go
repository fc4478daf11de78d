package litellm

import (
	"github.com/hayula/gateway/internal/netclass"
)

// provider is what a LiteLLM provider prefix ("groq/…") becomes here.
type provider struct {
	// adapter is "openai" or "ollama".
	adapter string
	// url is the base URL when api_base is not given; "" means api_base is required.
	url string
	// keyEnv is the variable LiteLLM reads the key from when the deployment gives no api_key;
	// "" for a server that takes none unless told (Ollama, a vLLM of one's own).
	keyEnv string
}

// providerFor returns what the LiteLLM provider name becomes, or why it cannot become anything.
// The hosted providers' URLs are each one's documented OpenAI-compatible base URL: OpenRouter's
// (openrouter.ai/docs), Groq's (console.groq.com/docs/openai), DeepSeek's
// (api-docs.deepseek.com: /v1 for OpenAI compatibility), Mistral's (docs.mistral.ai),
// Together's (docs.together.ai/docs/inference/openai-compatibility), Fireworks'
// (api.fireworks.ai/inference/v1) and xAI's (docs.x.ai/api/integrations).
func providerFor(name string) (provider, string) {
	switch name {
	case "ollama", "ollama_chat":
		return provider{adapter: "ollama", url: "http://localhost:11434"}, ""
	case "openai":
		return provider{adapter: "openai", url: "https://api.openai.com/v1", keyEnv: "OPENAI_API_KEY"}, ""
	case "hosted_vllm":
		return provider{adapter: "openai"}, ""
	case "openrouter":
		return provider{adapter: "openai", url: "https://openrouter.ai/api/v1", keyEnv: "OPENROUTER_API_KEY"}, ""
	case "groq":
		return provider{adapter: "openai", url: "https://api.groq.com/openai/v1", keyEnv: "GROQ_API_KEY"}, ""
	case "deepseek":
		return provider{adapter: "openai", url: "https://api.deepseek.com/v1", keyEnv: "DEEPSEEK_API_KEY"}, ""
	case "mistral":
		return provider{adapter: "openai", url: "https://api.mistral.ai/v1", keyEnv: "MISTRAL_API_KEY"}, ""
	case "together_ai":
		return provider{adapter: "openai", url: "https://api.together.ai/v1", keyEnv: "TOGETHERAI_API_KEY"}, ""
	case "fireworks_ai":
		return provider{adapter: "openai", url: "https://api.fireworks.ai/inference/v1", keyEnv: "FIREWORKS_AI_API_KEY"}, ""
	case "xai":
		return provider{adapter: "openai", url: "https://api.x.ai/v1", keyEnv: "XAI_API_KEY"}, ""
	case "anthropic", "azure", "azure_ai", "bedrock", "vertex_ai", "vertex_ai_beta", "gemini", "cohere", "cohere_chat",
		"sagemaker", "huggingface", "replicate", "cloudflare", "watsonx", "palm", "text-completion-openai":
		return provider{}, "LiteLLM's " + name + " provider speaks an API of its own, which none of this gateway's adapters (openai, ollama, saif) does"
	}
	return provider{}, "LiteLLM's " + name + " provider is not one this importer knows to speak OpenAI's API; if its server does, write it as an adapter = \"openai\" target with its url"
}

// privacy is a target's class and why: "private" for a host on the machine or a network of the
// user's own, "public" for anything else, which may be a third party: netclass.Local's answer,
// the one config's check of a target without class gives (TestImportClassAgreesWithConfig).
func privacy(host string) (class, why string) {
	local, why := netclass.Local(host)
	if local {
		return "private", why
	}
	return "public", why
}
