// The development broker held to the official .NET client (Azure.Messaging.ServiceBus), the
// one the Functions host's Service Bus trigger is built on. Usage:
//   dotnet run -- "<connection string with UseDevelopmentEmulator=true>"
// Prints one PASS/FAIL line per check and a closing "N passed, N failed"; exits 1 on any failure.
using Azure.Messaging.ServiceBus;
using PushDrain.ServiceBusContract;

if (args.Length != 1 || !args[0].Contains("UseDevelopmentEmulator=true", StringComparison.OrdinalIgnoreCase))
{
    Console.Error.WriteLine("usage: ServiceBusContract <connection string with UseDevelopmentEmulator=true>");
    return 2;
}

// Fast fixed retries: the default exponential back-off would turn one broker mistake into minutes.
await using var client = new ServiceBusClient(args[0], new ServiceBusClientOptions
{
    RetryOptions = new ServiceBusRetryOptions
    {
        Mode = ServiceBusRetryMode.Fixed,
        Delay = TimeSpan.FromMilliseconds(100),
        MaxRetries = 1,
        TryTimeout = TimeSpan.FromSeconds(10),
    },
});

var runner = new CheckRunner(TimeSpan.FromSeconds(30));
await ContractChecks.RunAll(client, runner);
Console.WriteLine($"{runner.Passed} passed, {runner.Failed} failed");
return runner.Failed == 0 ? 0 : 1;
