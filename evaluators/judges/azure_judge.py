"""Azure OpenAI as a registered kind of judge: the OpenAI-compatible judge (openai_judge: its protocol, transport,
parameters learned from HTTP 400s, estimate, cache) reached through the openai SDK's Azure client, configured as the
SDK reads it:

* the endpoint (`https://RESOURCE.openai.azure.com`) and the API version (e.g. `2024-10-21`) from the judge's fields,
  None: $AZURE_OPENAI_ENDPOINT and $OPENAI_API_VERSION (the run's config records what was used, so a resume reaches
  the same deployment);
* the key from $AZURE_OPENAI_API_KEY, or lent for one run; never stored;
* the model is the deployment's name: requests go to `/openai/deployments/<deployment>/chat/completions?api-version=...`
  with the key in an `api-key` header (`AsyncAzureOpenAI`, our retries: max_retries=0).

A deployment's name is its owner's choice, so no list price applies: the run's prices are those given (flags, the
Evaluate screen), else the cost is unknown. The deployment's model may be a reasoning model under another name: the
judge learns what it refuses from its 400s, as for any server (openai_params).

The Batch API is not offered: Azure runs batches only on a deployment of type Global Batch, addressed as
`/chat/completions`, while the judge's batches are OpenAI's (`/v1/chat/completions`, batch_api); a run asking for it is
refused with the reason (`problems`) rather than sent where it cannot work.
"""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass

from evaluators.judges.openai_judge import OpenAIJudge, ServerField
from evaluators.judges.registry import register

ENDPOINT_ENV, VERSION_ENV, KEY_ENV = "AZURE_OPENAI_ENDPOINT", "OPENAI_API_VERSION", "AZURE_OPENAI_API_KEY"


@dataclass(frozen=True)
class AzureClient:
    """The transport's client factory (openai_transport.ClientFactory) for one Azure endpoint and API version."""

    endpoint: str
    api_version: str

    def __call__(self, api_key: str, timeout: float):
        import openai  # only when a request goes out, as the OpenAI judge does

        return openai.AsyncAzureOpenAI(azure_endpoint=self.endpoint, api_version=self.api_version, api_key=api_key,
                                       timeout=timeout, max_retries=0)


@register
@dataclass(frozen=True)
class AzureJudge(OpenAIJudge):
    """An Azure OpenAI deployment (`model`: its name) of the resource at `endpoint`, spoken to in `api_version`."""

    endpoint: str | None = None  # None: $AZURE_OPENAI_ENDPOINT
    api_version: str | None = None  # None: $OPENAI_API_VERSION

    name = "azure"
    label = "Azure OpenAI (a deployment of your resource)"
    key_env = KEY_ENV
    list_priced = False
    offers_batch = False
    server_fields = (
        ServerField("endpoint", "Endpoint", ENDPOINT_ENV, "https://RESOURCE.openai.azure.com",
                    f"Your Azure OpenAI resource's endpoint. Empty: the server's {ENDPOINT_ENV}."),
        ServerField("api_version", "API version", VERSION_ENV, "e.g. 2024-10-21",
                    f"The Azure OpenAI API version requests are made in. Empty: the server's {VERSION_ENV}."))
    model_label = ("Deployment", "your deployment's name")

    @property
    def azure_endpoint(self) -> str | None:
        return self.endpoint or os.environ.get(ENDPOINT_ENV) or None

    @property
    def azure_api_version(self) -> str | None:
        return self.api_version or os.environ.get(VERSION_ENV) or None

    def server(self) -> dict:
        """The endpoint stands for the base URL in the transport's messages and cache keys; the Azure client
        builds the deployment's URL from it."""
        endpoint, version = self.azure_endpoint, self.azure_api_version
        return {"base_url": endpoint, "key_env": self.key_env,
                "client_factory": AzureClient(endpoint, version) if endpoint and version else None}

    def lacks(self, api_key: str | None = None) -> list[tuple[str, str]]:
        """The deployment, the endpoint, the API version and the key, in that order."""
        base, found = dict(super().lacks(api_key)), []
        if "model" in base:
            found.append(("model", "name the Azure deployment (the judge's model)"))
        if not self.azure_endpoint:
            found.append(("endpoint", f"give the Azure OpenAI endpoint, https://RESOURCE.openai.azure.com (or set "
                                      f"{ENDPOINT_ENV})"))
        if not self.azure_api_version:
            found.append(("api_version", f"give the Azure OpenAI API version, e.g. 2024-10-21 (or set {VERSION_ENV})"))
        if "api_key" in base:
            found.append(("api_key", base["api_key"]))
        return found

    def problems(self) -> list[tuple[str, str]]:
        found = []
        if self.batch:
            found.append(("batch", "the azure judge does not use the Batch API: Azure runs batches only on a Global "
                                   "Batch deployment, addressed otherwise than OpenAI's Batch API the judge speaks; "
                                   "run it without the Batch API"))
        if self.base_url:
            found.append(("base_url", "the azure judge takes an endpoint (AZURE_OPENAI_ENDPOINT), not a base URL"))
        return found

    def config(self) -> dict:
        """The endpoint and API version used (never the key), then the OpenAI judge's settings."""
        settings = {k: v for k, v in super().config().items() if k != "base_url"}
        return {"endpoint": self.azure_endpoint, "api_version": self.azure_api_version} | settings

    @classmethod
    def of_config(cls, model: str | None, config: Mapping) -> AzureJudge:
        return dataclasses.replace(super().of_config(model, config), endpoint=config.get("endpoint"),
                                   api_version=config.get("api_version"))
