using System.Diagnostics;

namespace PushDrain.ServiceBusContract;

/// <summary>Runs named checks one at a time, each bounded in time, and prints one line per check.</summary>
public sealed class CheckRunner(TimeSpan timeoutPerCheck)
{
    public int Passed { get; private set; }
    public int Failed { get; private set; }

    /// <summary>Runs after a failed check, so that what it left behind does not fail the next one.</summary>
    public Func<Task>? OnFailure { get; set; }

    public async Task Run(string name, Func<CancellationToken, Task> check)
    {
        using var cts = new CancellationTokenSource(timeoutPerCheck);
        var watch = Stopwatch.StartNew();
        try
        {
            await check(cts.Token).WaitAsync(timeoutPerCheck + TimeSpan.FromSeconds(5));
            Passed++;
            Console.WriteLine($"PASS {name} ({watch.ElapsedMilliseconds} ms)");
        }
        catch (Exception e)
        {
            Failed++;
            // One line per failure: the exception's type and message name what the broker got wrong.
            var message = e.Message.ReplaceLineEndings(" ");
            Console.WriteLine($"FAIL {name} ({watch.ElapsedMilliseconds} ms): {e.GetType().Name}: {message}");
            if (e is not ContractException && Environment.GetEnvironmentVariable("CONTRACT_STACKS") == "1") Console.WriteLine(e.StackTrace);
            if (OnFailure is not null)
            {
                try { await OnFailure().WaitAsync(timeoutPerCheck); }
                catch (Exception cleanup) { Console.WriteLine($"  (clean-up after the failure failed too: {cleanup.GetType().Name}: {cleanup.Message.ReplaceLineEndings(" ")})"); }
            }
        }
    }
}

/// <summary>Thrown by a check whose expectation does not hold.</summary>
public sealed class ContractException(string message) : Exception(message)
{
    public static void Expect(bool condition, string what)
    {
        if (!condition) throw new ContractException(what);
    }
}
