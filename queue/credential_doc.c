/* The Microsoft Entra ID section of docs/configuration.md (printed by `sqlq config markdown`
 * after the settings tables), kept beside the code it describes. */
#include "credential_doc.h"

static const char *const lines[] = {
    "## Microsoft Entra ID (identity-based connections)",
    "",
    "Storage accounts that disable shared-key access are reached with a Microsoft Entra ID",
    "access token instead of a key or SAS, with Azure Functions' identity-based connection",
    "settings, so a Functions app's settings work unchanged:",
    "",
    "| variable | meaning |",
    "|---|---|",
    "| `AzureWebJobsStorage__accountName` or `SQLQ_QUEUE_CONNECTION__accountName` | the storage "
    "account's name (3 to 24 lowercase letters and digits): the queue service is "
    "`https://{accountName}.queue.core.windows.net` |",
    "| `AzureWebJobsStorage__queueServiceUri` or `SQLQ_QUEUE_CONNECTION__queueServiceUri` | the "
    "queue service, `https://ACCOUNT.queue.core.windows.net` (https only; another cloud, a "
    "private endpoint); wins over `__accountName` when both are set, as in Azure Functions |",
    "| `…__credential` (optional) | `managedidentity`, `workloadidentity` or `environment`; unset = "
    "the DefaultAzureCredential order below |",
    "| `…__clientId` (optional) | a user-assigned managed identity (or the workload identity's "
    "application) |",
    "",
    "They are read when `SQLQ_QUEUE_CONNECTION` / `AzureWebJobsStorage` (and their `_FILE`) are "
    "not set; the `SQLQ_QUEUE_CONNECTION__…` ones before the `AzureWebJobsStorage__…` ones. "
    "The same as one value, for `--queue-connection` or a config file: "
    "`QueueServiceUri=https://ACCOUNT.queue.core.windows.net;Credential=managedidentity;"
    "ClientId=…`.",
    "",
    "Without `credential`, the first source whose variables are set is used, in the order of the "
    "Azure SDKs' DefaultAzureCredential (the chosen source is logged at start-up, `token.source`):",
    "",
    "| order | source | variables | request |",
    "|---|---|---|---|",
    "| 1 | service principal (`environment`) | `AZURE_TENANT_ID`, `AZURE_CLIENT_ID`, "
    "`AZURE_CLIENT_SECRET`, optional `AZURE_AUTHORITY_HOST` | POST "
    "`{AZURE_AUTHORITY_HOST or https://login.microsoftonline.com/}{tenant}/oauth2/v2.0/token`, "
    "`grant_type=client_credentials`, `scope=https://storage.azure.com/.default` |",
    "| 2 | workload identity (`workloadidentity`, AKS) | `AZURE_FEDERATED_TOKEN_FILE`, "
    "`AZURE_TENANT_ID`, `AZURE_CLIENT_ID` (or `clientId`), `AZURE_AUTHORITY_HOST` | the same "
    "POST with `client_assertion_type=urn:ietf:params:oauth:client-assertion-type:jwt-bearer` "
    "and the file's content as `client_assertion`; the file is re-read for every token (the "
    "kubelet rotates it) |",
    "| 3 | managed identity, App Service / Container Apps (`managedidentity`) | "
    "`IDENTITY_ENDPOINT`, `IDENTITY_HEADER` | GET `$IDENTITY_ENDPOINT?api-version=2019-08-01&"
    "resource=https://storage.azure.com[&client_id=…]`, header `X-IDENTITY-HEADER` |",
    "| 3 | managed identity, IMDS (VMs, AKS pod identity) (`managedidentity`) | none; "
    "`AZURE_POD_IDENTITY_AUTHORITY_HOST` overrides `http://169.254.169.254` | GET "
    "`/metadata/identity/oauth2/token?api-version=2018-02-01&resource=…[&client_id=…]`, header "
    "`Metadata: true` |",
    "",
    "An explicit `credential` whose variables are missing is a configuration error (exit 2) "
    "naming them. Other DefaultAzureCredential sources (Azure CLI, certificates) are not "
    "supported.",
    "",
    "Behaviour:",
    "",
    "- Requests carry `Authorization: Bearer` with x-ms-version 2019-12-12 (OAuth needs "
    "2017-11-09 or later), over https only: an `http://` queue service with a token is refused "
    "(exit 2), `allow_insecure_http` notwithstanding. `ca_file` (`--ca-file`, `SQLQ_CA_FILE`) is "
    "trusted for the token endpoints too; TLS is always verified. `AZURE_AUTHORITY_HOST` must be "
    "https (the secret or federated token travels there).",
    "- One token per process, shared by every route thread and consumer worker: one token "
    "request at a time (the others wait for it); refreshed once less than min(5 min, half its "
    "lifetime) remains; a refresh that fails while the token is still valid keeps it and asks "
    "again after 10 s.",
    "- A 401 (or Azurite's 403 `AuthenticationFailed`) drops the token: one new token, one more "
    "attempt. A 403 `AuthorizationPermissionMismatch` is a missing role, not a token problem.",
    "- A token endpoint that fails is an outage, never a reason to poison a message: requests "
    "back off and retry, `/readyz` answers 503, operator commands exit 1 after their retry "
    "budget. A 4xx from the token endpoint (wrong secret, unknown identity) is reported at once "
    "as the credential refused, with the endpoint's status, error code and description "
    "(`no Microsoft Entra ID token: service principal (AZURE_CLIENT_SECRET) refused the "
    "credential: 401 AADSTS7000215: …`); a 5xx as `… failed: 500 …`; no reply as `… cannot be "
    "reached at {endpoint}: …`. The `queue_outage` cause and the final message say the same. "
    "Errors name the source and never hold a token, secret, identity header or federated token.",
    "- Roles: Storage Queue Data Message Sender (bridge), Data Message Processor (consume), "
    "Data Contributor (creating queues). See docs/security.md.",
    "",
};

void sqlq_credential_print_markdown(FILE *f)
{
    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
        fputs(lines[i], f);
        fputc('\n', f);
    }
}
