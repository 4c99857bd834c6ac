// Transactional producer from the pinned Kafka 4.1.1 client jars, for fixture scenarios that
// need the Java client's exact protocol behaviour (KIP-890 part 2 / transaction.version 2:
// the client negotiates TV2 with the brokers, skips AddPartitionsToTxn, and the coordinator
// bumps the epoch at every EndTxn, so on disk a partition shows data(e) ... marker(e+1)).
//
// Run as a single-file program (no build step):
//   java -cp '.kafka/libs/*' tools/kafka/java/TxnProducer.java \
//     --bootstrap 127.0.0.1:9092 --transactional-id tv2-app --topic t --partitions 0,1 \
//     --records 3 --transactions 2 --end commit [--offsets-group g --offsets-topic t
//     --offsets-start 0]
//     [--end-last open|commit|abort] [--timeout-ms 60000]
//
// Each transaction: begin, send --records records to every listed partition, optionally
// sendOffsetsToTransaction (offset = --offsets-start + transaction number + 1 for every listed
// partition of --offsets-topic, so __consumer_offsets carries a transactional batch and a marker), then
// commit or abort. --end-last overrides the ending of the last transaction; "open" flushes the
// data and halts the JVM so nothing aborts it (the coordinator's timeout will, later).
//
// Output: one line per acknowledged record, tab-separated:
//   record <txn#> <topic> <partition> <offset> <timestampMs>
// and "end <txn#> commit|abort|open" after each transaction, so callers can record ground truth.
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Future;

import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringSerializer;

public class TxnProducer {
    private static Map<String, String> parse(String[] args) {
        Map<String, String> opts = new HashMap<>();
        for (int i = 0; i < args.length; i += 2) {
            if (!args[i].startsWith("--") || i + 1 >= args.length) {
                throw new IllegalArgumentException("expected --name value pairs, got " + args[i]);
            }
            opts.put(args[i].substring(2), args[i + 1]);
        }
        for (String required : new String[] {"bootstrap", "transactional-id", "topic", "partitions"}) {
            if (!opts.containsKey(required)) {
                throw new IllegalArgumentException("missing --" + required);
            }
        }
        return opts;
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> opts = parse(args);
        String topic = opts.get("topic");
        List<Integer> partitions = new ArrayList<>();
        for (String p : opts.get("partitions").split(",")) {
            partitions.add(Integer.parseInt(p.trim()));
        }
        int records = Integer.parseInt(opts.getOrDefault("records", "3"));
        int transactions = Integer.parseInt(opts.getOrDefault("transactions", "1"));
        String end = opts.getOrDefault("end", "commit");
        String endLast = opts.getOrDefault("end-last", end);
        String offsetsGroup = opts.get("offsets-group");
        String offsetsTopic = opts.getOrDefault("offsets-topic", topic);
        long offsetsStart = Long.parseLong(opts.getOrDefault("offsets-start", "0"));

        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, opts.get("bootstrap"));
        props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, opts.get("transactional-id"));
        props.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, opts.getOrDefault("timeout-ms", "60000"));
        props.put(ProducerConfig.CLIENT_ID_CONFIG, "logscan-" + opts.get("transactional-id"));
        props.put(ProducerConfig.LINGER_MS_CONFIG, "0");
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());

        KafkaProducer<String, String> producer = new KafkaProducer<>(props);
        producer.initTransactions();
        for (int txn = 0; txn < transactions; txn++) {
            String ending = txn == transactions - 1 ? endLast : end;
            producer.beginTransaction();
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            for (int partition : partitions) {
                for (int r = 0; r < records; r++) {
                    String key = "k" + r;
                    String value = opts.get("transactional-id") + "-txn" + txn + "-p" + partition + "-r" + r;
                    sent.add(producer.send(new ProducerRecord<>(topic, partition, key, value)));
                }
            }
            for (Future<RecordMetadata> f : sent) {
                RecordMetadata md = f.get();
                System.out.println(String.join("\t", "record", Integer.toString(txn), md.topic(),
                    Integer.toString(md.partition()), Long.toString(md.offset()), Long.toString(md.timestamp())));
            }
            if (offsetsGroup != null) {
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (int partition : partitions) {
                    offsets.put(new TopicPartition(offsetsTopic, partition), new OffsetAndMetadata(offsetsStart + txn + 1));
                }
                producer.sendOffsetsToTransaction(offsets, new ConsumerGroupMetadata(offsetsGroup));
            }
            switch (ending) {
                case "commit":
                    producer.commitTransaction();
                    break;
                case "abort":
                    producer.abortTransaction();
                    break;
                case "open":
                    producer.flush();
                    System.out.println("end\t" + txn + "\topen");
                    System.out.flush();
                    // close() would abort the open transaction (Sender aborts on shutdown); halting
                    // leaves it to the coordinator, exactly like a crashed application.
                    Runtime.getRuntime().halt(0);
                    break;
                default:
                    throw new IllegalArgumentException("--end must be commit, abort or open: " + ending);
            }
            System.out.println("end\t" + txn + "\t" + ending);
        }
        producer.close(Duration.ofSeconds(30));
    }
}
