using Azure.Messaging.ServiceBus;
using static PushDrain.ServiceBusContract.ContractException;

namespace PushDrain.ServiceBusContract;

/// <summary>
/// What the app and the Functions host's Service Bus trigger do, against the entities that
/// infra/servicebus-entities.json declares. Each check leaves its entities empty, so the next
/// starts clean; after a failure the runner purges what is left.
/// </summary>
public static class ContractChecks
{
    private const string Topic = "work-detected";
    private const string Queue = "batch-watchdog";
    private const int QueueMaxDeliveryCount = 10;
    private static readonly string[] Subscriptions = ["drain", "aggregate", "scale"];

    public static async Task RunAll(ServiceBusClient client, CheckRunner runner)
    {
        await using var sender = client.CreateSender(Queue);
        await using var receiver = client.CreateReceiver(Queue);
        await using var deadLetters = client.CreateReceiver(Queue, new ServiceBusReceiverOptions { SubQueue = SubQueue.DeadLetter });
        runner.OnFailure = () => Purge(client);

        await runner.Run("queue: send, receive in peek-lock, complete", async ct =>
        {
            var sent = new ServiceBusMessage(BinaryData.FromString("{\"n\":1}"))
            {
                ContentType = "application/json",
                CorrelationId = "corr-1",
                Subject = "subject-1",
                ApplicationProperties = { ["role"] = "input", ["n"] = 7L },
            };
            var before = DateTimeOffset.UtcNow;
            await sender.SendMessageAsync(sent, ct);
            var m = await ReceiveOne(receiver, ct);
            Expect(m.Body.ToString() == "{\"n\":1}", $"body round-trips (got {m.Body})");
            Expect(m.ContentType == "application/json" && m.CorrelationId == "corr-1" && m.Subject == "subject-1", "properties round-trip");
            Expect(m.ApplicationProperties["role"] as string == "input", "application property role");
            // The broker keeps numbers as JavaScript numbers, so their AMQP type narrows (README: known differences).
            Expect(m.ApplicationProperties["n"] is IConvertible n && n.ToInt64(null) == 7, $"application property n is 7 (got {m.ApplicationProperties["n"]} as {m.ApplicationProperties["n"]?.GetType().Name})");
            Console.WriteLine($"  (a long application property came back as {m.ApplicationProperties["n"]?.GetType().Name})");
            Expect(!string.IsNullOrEmpty(m.MessageId), "the broker assigns a message id");
            Expect(m.DeliveryCount == 1, $"DeliveryCount is 1 on first delivery (got {m.DeliveryCount})");
            Expect(m.SequenceNumber > 0, $"sequence number (got {m.SequenceNumber})");
            Expect(m.LockToken != Guid.Empty.ToString(), "a lock token");
            Expect(m.LockedUntil > DateTimeOffset.UtcNow, $"locked until a future time (got {m.LockedUntil:O})");
            Expect(m.EnqueuedTime >= before.AddSeconds(-2) && m.EnqueuedTime <= DateTimeOffset.UtcNow.AddSeconds(2), $"enqueued time is now (got {m.EnqueuedTime:O})");
            Expect(m.State == ServiceBusMessageState.Active, $"state Active (got {m.State})");
            await receiver.CompleteMessageAsync(m, ct);
            await ExpectEmpty(receiver, ct);
        });

        await runner.Run("queue: a message batch arrives whole and in order", async ct =>
        {
            using var batch = await sender.CreateMessageBatchAsync(ct);
            Expect(batch.MaxSizeInBytes == 262_144, $"batch limit is the Standard tier's 256 KiB (got {batch.MaxSizeInBytes})");
            for (var i = 0; i < 5; i++) Expect(batch.TryAddMessage(new ServiceBusMessage($"b-{i}") { MessageId = $"b-{i}" }), "message fits");
            await sender.SendMessagesAsync(batch, ct);
            var got = await ReceiveExactly(receiver, 5, ct);
            // Order by sequence number: the client may hand over a message that arrived on credit
            // left from an earlier timed-out receive after the ones of the current call.
            var ids = string.Join(",", got.OrderBy(m => m.SequenceNumber).Select(m => m.MessageId));
            Expect(ids == "b-0,b-1,b-2,b-3,b-4", $"sequence numbers follow the batch's order (got {ids})");
            foreach (var m in got) await receiver.CompleteMessageAsync(m, ct);
            await ExpectEmpty(receiver, ct);
        });

        await runner.Run("queue: abandon redelivers with the delivery count raised", async ct =>
        {
            await sender.SendMessageAsync(new ServiceBusMessage("abandon-me") { MessageId = "abandon-1" }, ct);
            var first = await ReceiveOne(receiver, ct);
            await receiver.AbandonMessageAsync(first, new Dictionary<string, object> { ["reason"] = "retry" }, ct);
            var second = await ReceiveOne(receiver, ct);
            Expect(second.MessageId == "abandon-1", "the same message again");
            Expect(second.DeliveryCount == first.DeliveryCount + 1, $"delivery count {first.DeliveryCount} then {second.DeliveryCount}");
            Expect(second.LockToken != first.LockToken, "a new lock token");
            Expect(second.ApplicationProperties.TryGetValue("reason", out var r) && r as string == "retry", "abandon's properties to modify are applied");
            await receiver.CompleteMessageAsync(second, ct);
            await ExpectEmpty(receiver, ct);
        });

        await runner.Run($"queue: abandoned {QueueMaxDeliveryCount} times, the message is in the DLQ", async ct =>
        {
            await sender.SendMessageAsync(new ServiceBusMessage("poison") { MessageId = "poison-1" }, ct);
            for (var i = 1; i <= QueueMaxDeliveryCount; i++)
            {
                var m = await ReceiveOne(receiver, ct);
                Expect(m.DeliveryCount == i, $"delivery {i} has DeliveryCount {i} (got {m.DeliveryCount})");
                await receiver.AbandonMessageAsync(m, cancellationToken: ct);
            }
            await ExpectEmpty(receiver, ct);
            var dead = await ReceiveOne(deadLetters, ct);
            Expect(dead.MessageId == "poison-1", "the poison message is in the DLQ");
            Expect(dead.DeadLetterReason == "MaxDeliveryCountExceeded", $"DeadLetterReason (got {dead.DeadLetterReason})");
            Expect(dead.State == ServiceBusMessageState.Active, $"state Active in the DLQ (got {dead.State})");
            await deadLetters.CompleteMessageAsync(dead, ct);
            await ExpectEmpty(deadLetters, ct);
        });

        await runner.Run("queue: dead-letter with a reason and a description", async ct =>
        {
            await sender.SendMessageAsync(new ServiceBusMessage("bad") { MessageId = "bad-1" }, ct);
            var m = await ReceiveOne(receiver, ct);
            await receiver.DeadLetterMessageAsync(m, "BadInput", "field x is missing", ct);
            await ExpectEmpty(receiver, ct);
            var dead = await ReceiveOne(deadLetters, ct);
            Expect(dead.MessageId == "bad-1", "the message is in the DLQ");
            Expect(dead.DeadLetterReason == "BadInput" && dead.DeadLetterErrorDescription == "field x is missing",
                $"reason and description (got {dead.DeadLetterReason} / {dead.DeadLetterErrorDescription})");
            await deadLetters.CompleteMessageAsync(dead, ct);
        });

        await runner.Run("queue: lock renewal moves LockedUntil on", async ct =>
        {
            await sender.SendMessageAsync(new ServiceBusMessage("renew-me"), ct);
            var m = await ReceiveOne(receiver, ct);
            var first = m.LockedUntil;
            await Task.Delay(1100, ct);
            await receiver.RenewMessageLockAsync(m, ct);
            Expect(m.LockedUntil > first.AddMilliseconds(900), $"renewed from {first:O} to {m.LockedUntil:O}");
            await receiver.CompleteMessageAsync(m, ct);
            await ExpectEmpty(receiver, ct);
        });

        await runner.Run("queue: peek neither locks nor counts a delivery", async ct =>
        {
            await sender.SendMessageAsync(new ServiceBusMessage("peek-me") { MessageId = "peek-1" }, ct);
            var peeked = await receiver.PeekMessageAsync(cancellationToken: ct);
            Expect(peeked?.MessageId == "peek-1", $"peeked (got {peeked?.MessageId ?? "nothing"})");
            var m = await ReceiveOne(receiver, ct);
            Expect(m.DeliveryCount == 1, $"DeliveryCount still 1 after a peek (got {m.DeliveryCount})");
            await receiver.CompleteMessageAsync(m, ct);
        });

        await runner.Run("queue: defer, then receive the deferred message by sequence number", async ct =>
        {
            await sender.SendMessageAsync(new ServiceBusMessage("defer-me") { MessageId = "defer-1" }, ct);
            var m = await ReceiveOne(receiver, ct);
            await receiver.DeferMessageAsync(m, cancellationToken: ct);
            await ExpectEmpty(receiver, ct);
            var deferred = await receiver.ReceiveDeferredMessageAsync(m.SequenceNumber, ct);
            Expect(deferred.MessageId == "defer-1", "the deferred message");
            Expect(deferred.State == ServiceBusMessageState.Deferred, $"state Deferred (got {deferred.State})");
            await receiver.CompleteMessageAsync(deferred, ct);
            await ExpectEmpty(receiver, ct);
        });

        await runner.Run("queue: a scheduled message arrives at its time, not before", async ct =>
        {
            var at = DateTimeOffset.UtcNow.AddSeconds(2);
            var sequence = await sender.ScheduleMessageAsync(new ServiceBusMessage("later") { MessageId = "scheduled-1" }, at, ct);
            Expect(sequence > 0, $"schedule returns a sequence number (got {sequence})");
            await ExpectEmpty(receiver, ct);
            var m = await ReceiveOne(receiver, ct, TimeSpan.FromSeconds(8));
            var arrived = DateTimeOffset.UtcNow;
            Expect(m.MessageId == "scheduled-1", "the scheduled message");
            Expect(arrived >= at.AddMilliseconds(-50), $"not before its time ({arrived:O} < {at:O})");
            Expect(m.SequenceNumber == sequence, $"the sequence number schedule returned ({sequence}, got {m.SequenceNumber})");
            Expect(Math.Abs((m.ScheduledEnqueueTime - at).TotalMilliseconds) < 1000, $"ScheduledEnqueueTime (got {m.ScheduledEnqueueTime:O})");
            await receiver.CompleteMessageAsync(m, ct);
        });

        await runner.Run("queue: a cancelled scheduled message never arrives", async ct =>
        {
            var sequence = await sender.ScheduleMessageAsync(new ServiceBusMessage("never"), DateTimeOffset.UtcNow.AddSeconds(1), ct);
            await sender.CancelScheduledMessageAsync(sequence, ct);
            await Task.Delay(1500, ct);
            await ExpectEmpty(receiver, ct);
        });

        await runner.Run("topic: the correlation filter on role routes to drain, aggregate and scale", async ct =>
        {
            await using var topic = client.CreateSender(Topic);
            await topic.SendMessageAsync(new ServiceBusMessage("in") { MessageId = "in-1", ApplicationProperties = { ["role"] = "input" } }, ct);
            await topic.SendMessageAsync(new ServiceBusMessage("out") { MessageId = "out-1", ApplicationProperties = { ["role"] = "output" } }, ct);
            await topic.SendMessageAsync(new ServiceBusMessage("none") { MessageId = "none-1" }, ct);
            var expected = new Dictionary<string, string>
            {
                ["drain"] = "in-1",
                ["aggregate"] = "out-1",
                ["scale"] = "in-1,none-1,out-1",
            };
            foreach (var (subscription, ids) in expected)
            {
                await using var sub = client.CreateReceiver(Topic, subscription);
                var got = await ReceiveExactly(sub, ids.Split(',').Length, ct);
                foreach (var m in got) await sub.CompleteMessageAsync(m, ct);
                var seen = string.Join(",", got.Select(m => m.MessageId).Order());
                Expect(seen == ids, $"{subscription} got {seen}, expected {ids}");
                await ExpectEmpty(sub, ct);
            }
        });

        await runner.Run("topic: a processor as the Functions trigger runs it (auto-complete, lock renewal, concurrency)", async ct =>
        {
            await using var topic = client.CreateSender(Topic);
            const int count = 6;
            for (var i = 0; i < count; i++)
                await topic.SendMessageAsync(new ServiceBusMessage($"p-{i}") { MessageId = $"p-{i}", ApplicationProperties = { ["role"] = "input" } }, ct);
            // The host's defaults from host.json: no prefetch, auto-complete, lock renewal up to 10 minutes.
            await using var processor = client.CreateProcessor(Topic, "drain", new ServiceBusProcessorOptions
            {
                AutoCompleteMessages = true,
                MaxConcurrentCalls = 4,
                PrefetchCount = 0,
                MaxAutoLockRenewalDuration = TimeSpan.FromMinutes(10),
            });
            var seen = new System.Collections.Concurrent.ConcurrentDictionary<string, int>();
            var errors = new System.Collections.Concurrent.ConcurrentQueue<string>();
            var done = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
            processor.ProcessMessageAsync += args =>
            {
                seen.AddOrUpdate(args.Message.MessageId, 1, (_, n) => n + 1);
                if (seen.Count == count) done.TrySetResult();
                return Task.CompletedTask;
            };
            processor.ProcessErrorAsync += args =>
            {
                errors.Enqueue($"{args.ErrorSource}: {args.Exception.Message}");
                return Task.CompletedTask;
            };
            await processor.StartProcessingAsync(ct);
            await done.Task.WaitAsync(TimeSpan.FromSeconds(15), ct);
            // Give the last auto-completes time to settle before stopping closes the link.
            await Task.Delay(300, ct);
            await processor.StopProcessingAsync(ct);
            Expect(errors.IsEmpty, $"no processor errors (got {string.Join(" | ", errors)})");
            Expect(seen.Values.All(n => n == 1), "each message handled once");
            await using var drain = client.CreateReceiver(Topic, "drain");
            await ExpectEmpty(drain, ct);
            await using var scale = client.CreateReceiver(Topic, "scale", new ServiceBusReceiverOptions { ReceiveMode = ServiceBusReceiveMode.ReceiveAndDelete });
            Expect((await ReceiveExactly(scale, count, ct)).Count == count, "scale saw every message (received and deleted)");
        });

        await runner.Run("an entity infra does not declare is refused as not found", async ct =>
        {
            await using var unknown = client.CreateSender("no-such-queue");
            try
            {
                await unknown.SendMessageAsync(new ServiceBusMessage("x"), ct);
            }
            // The entity's name in the message: a failed connection can surface with the same reason.
            catch (ServiceBusException e) when (e.Reason == ServiceBusFailureReason.MessagingEntityNotFound && e.Message.Contains("no-such-queue"))
            {
                return;
            }
            throw new ContractException("sending to an undeclared queue succeeded");
        });
    }

    private static async Task<ServiceBusReceivedMessage> ReceiveOne(ServiceBusReceiver receiver, CancellationToken ct, TimeSpan? wait = null)
    {
        var got = await ReceiveExactly(receiver, 1, ct, wait);
        return got[0];
    }

    /// <summary>Receives until <paramref name="count"/> arrived; bounded in calls and time, so a lost message fails rather than hangs.</summary>
    private static async Task<List<ServiceBusReceivedMessage>> ReceiveExactly(ServiceBusReceiver receiver, int count, CancellationToken ct, TimeSpan? wait = null)
    {
        var got = new List<ServiceBusReceivedMessage>();
        var deadline = DateTimeOffset.UtcNow + (wait ?? TimeSpan.FromSeconds(5));
        for (var calls = 0; got.Count < count && calls < 100 && DateTimeOffset.UtcNow < deadline; calls++)
        {
            var left = deadline - DateTimeOffset.UtcNow;
            var max = left < TimeSpan.FromSeconds(1) ? left : TimeSpan.FromSeconds(1);
            if (max <= TimeSpan.Zero) break;
            got.AddRange(await receiver.ReceiveMessagesAsync(count - got.Count, max, ct));
        }
        Expect(got.Count == count, $"{count} message(s) from {receiver.EntityPath} (got {got.Count})");
        return got;
    }

    private static async Task ExpectEmpty(ServiceBusReceiver receiver, CancellationToken ct)
    {
        var extra = await receiver.ReceiveMessageAsync(TimeSpan.FromMilliseconds(300), ct);
        Expect(extra is null, $"{receiver.EntityPath} is empty (got {extra?.MessageId})");
    }

    /// <summary>Deletes what a failed check left available, so that later checks start clean.</summary>
    private static async Task Purge(ServiceBusClient client)
    {
        var options = new ServiceBusReceiverOptions { ReceiveMode = ServiceBusReceiveMode.ReceiveAndDelete };
        var receivers = new List<ServiceBusReceiver>
        {
            client.CreateReceiver(Queue, options),
            client.CreateReceiver(Queue, new ServiceBusReceiverOptions { ReceiveMode = ServiceBusReceiveMode.ReceiveAndDelete, SubQueue = SubQueue.DeadLetter }),
        };
        receivers.AddRange(Subscriptions.Select(s => client.CreateReceiver(Topic, s, options)));
        foreach (var r in receivers)
        {
            for (var i = 0; i < 20 && (await r.ReceiveMessagesAsync(100, TimeSpan.FromMilliseconds(200))).Count > 0; i++) { }
            await r.DisposeAsync();
        }
    }
}
