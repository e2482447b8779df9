using Microsoft.Azure.WebJobs.Host;

namespace PushDrain.Bench.Peers;

/// <summary>
/// The Functions host's queue defaults (host.json `extensions.queues`), set explicitly so the
/// peer measures them even if a later extension version changes its own: batchSize 16,
/// newBatchThreshold batchSize / 2 (the host computes it as batchSize / 2 × processor count on
/// the Consumption plan's single core), maxPollingInterval 1 minute, visibilityTimeout 0,
/// maxDequeueCount 5.
/// </summary>
public static class QueueTriggerDefaults
{
    public static void Apply(QueuesOptions options)
    {
        options.BatchSize = 16;
        options.NewBatchThreshold = 8;
        options.MaxPollingInterval = TimeSpan.FromMinutes(1);
        options.VisibilityTimeout = TimeSpan.Zero;
        options.MaxDequeueCount = 5;
    }
}
