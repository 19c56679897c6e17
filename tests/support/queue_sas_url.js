// Prints a queue-scoped SAS URL made by the official SDK (QueueClient.generateSasUrl), the form
// the Azure Portal's "Generate SAS" on a queue gives.
//   node queue_sas_url.js ENDPOINT ACCOUNT KEY QUEUE PERMISSIONS
const { QueueServiceClient, StorageSharedKeyCredential, QueueSASPermissions } = require("@azure/storage-queue");
const [endpoint, account, key, queue, perms] = process.argv.slice(2);
const service = new QueueServiceClient(endpoint, new StorageSharedKeyCredential(account, key));
const url = service.getQueueClient(queue).generateSasUrl({
    permissions: QueueSASPermissions.parse(perms || "raup"),
    expiresOn: new Date(Date.now() + 3600 * 1000),
});
process.stdout.write(url + "\n");
