// The real Azure Functions queue trigger, as a bench peer: the WebJobs SDK host with the Storage
// Queues extension, one [QueueTrigger] per queue that the bench's port polls (PEER_PREFIX +
// work-0..3 and results, as bench/baselines/functions-queue-trigger.ts names them). Each invocation
// prints `invoked <queue> <message id> <start, epoch ms>`; the function does no work.
//   AzureWebJobsStorage=<connection string> PEER_PREFIX=<prefix> dotnet WebJobsQueueTrigger.dll
using Microsoft.Azure.WebJobs;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using PushDrain.Bench.Peers;

if (string.IsNullOrEmpty(Environment.GetEnvironmentVariable("AzureWebJobsStorage")) || string.IsNullOrEmpty(Environment.GetEnvironmentVariable("PEER_PREFIX")))
{
    Console.Error.WriteLine("usage: AzureWebJobsStorage=<connection string> PEER_PREFIX=<queue name prefix> WebJobsQueueTrigger");
    return 2;
}

var host = new HostBuilder()
    .ConfigureWebJobs(webJobs =>
    {
        webJobs.AddAzureStorageCoreServices();
        webJobs.AddAzureStorageQueues(QueueTriggerDefaults.Apply);
    })
    // Only warnings from the host: stdout carries the invocation lines the bench parses.
    .ConfigureLogging(logging => logging.SetMinimumLevel(LogLevel.Warning).AddConsole(console => console.LogToStandardErrorThreshold = LogLevel.Trace))
    .Build();

using (host)
{
    await host.StartAsync();
    Console.WriteLine("ready");
    // The bench closes stdin to stop the peer (a signal would skip the listeners' clean stop).
    await Console.In.ReadToEndAsync();
    await host.StopAsync(TimeSpan.FromSeconds(10));
}
return 0;
