using Microsoft.Azure.WebJobs;

namespace PushDrain.Bench.Peers;

/// <summary>One trigger per queue the port polls; each only reports that it ran.</summary>
public static class QueueFunctions
{
    public static void Work0([QueueTrigger("%PEER_PREFIX%work-0")] string message, string id) => Invoked("work-0", id);
    public static void Work1([QueueTrigger("%PEER_PREFIX%work-1")] string message, string id) => Invoked("work-1", id);
    public static void Work2([QueueTrigger("%PEER_PREFIX%work-2")] string message, string id) => Invoked("work-2", id);
    public static void Work3([QueueTrigger("%PEER_PREFIX%work-3")] string message, string id) => Invoked("work-3", id);
    public static void Results([QueueTrigger("%PEER_PREFIX%results")] string message, string id) => Invoked("results", id);

    private static void Invoked(string queue, string id) =>
        Console.WriteLine($"invoked {queue} {id} {DateTimeOffset.UtcNow.ToUnixTimeMilliseconds()}");
}
