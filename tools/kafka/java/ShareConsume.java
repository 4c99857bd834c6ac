// A share consumer (KIP-932) from the cluster's own client jars, for the share-group fixture
// (tools/kafka/share.py): it makes the share coordinator write real __share_group_state records.
//
// Run as a single-file program (no build step):
//   java -cp '.kafka/<version>/libs/*' tools/kafka/java/ShareConsume.java \
//     --bootstrap 127.0.0.1:9092 --group g --topic t --records 12 [--timeout-ms 60000]
//
// First it sets the group's share.auto.offset.reset to earliest (a group config, Admin
// incrementalAlterConfigs on a GROUP resource: a share group starts at the latest offset by
// default, and the records are already there). Then it polls with explicit acknowledgement
// (share.acknowledgement.mode=explicit) and acknowledges record by record by offset: offset % 5
// == 3 RELEASE on its first delivery (so it is delivered again, delivery count 2, then
// ACCEPTed), offset % 5 == 4 REJECT (archived, never delivered again), every other ACCEPT;
// commitSync after each poll. It stops once --records distinct records have been settled
// (accepted or rejected), over all partitions.
//
// Output: one tab-separated line per acknowledgement:
//   ack <topic> <partition> <offset> <deliveryCount> ACCEPT|RELEASE|REJECT
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;

public class ShareConsume {
    public static void main(String[] argv) throws Exception {
        Map<String, String> a = new HashMap<>();
        for (int i = 0; i + 1 < argv.length; i += 2) a.put(argv[i].replaceFirst("^--", ""), argv[i + 1]);
        String bootstrap = a.get("bootstrap"), group = a.get("group"), topic = a.get("topic");
        int records = Integer.parseInt(a.get("records"));
        long deadline = System.currentTimeMillis() + Long.parseLong(a.getOrDefault("timeout-ms", "60000"));

        Properties ap = new Properties();
        ap.put("bootstrap.servers", bootstrap);
        try (Admin admin = Admin.create(ap)) {
            ConfigResource res = new ConfigResource(ConfigResource.Type.GROUP, group);
            admin.incrementalAlterConfigs(Map.of(res, List.of(new AlterConfigOp(
                    new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET))))
                    .all().get();
        }

        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("group.id", group);
        p.put("share.acknowledgement.mode", "explicit");
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        Set<String> settled = new HashSet<>();
        try (KafkaShareConsumer<String, String> c = new KafkaShareConsumer<>(p)) {
            c.subscribe(List.of(topic));
            while (settled.size() < records) {
                if (System.currentTimeMillis() > deadline)
                    throw new RuntimeException("only " + settled.size() + " of " + records + " records settled");
                ConsumerRecords<String, String> got = c.poll(Duration.ofMillis(500));
                for (ConsumerRecord<String, String> r : got) {
                    int count = r.deliveryCount().orElse((short) 1);
                    AcknowledgeType t;
                    if (r.offset() % 5 == 4) t = AcknowledgeType.REJECT;
                    else if (r.offset() % 5 == 3 && count == 1) t = AcknowledgeType.RELEASE;
                    else t = AcknowledgeType.ACCEPT;
                    c.acknowledge(r, t);
                    if (t != AcknowledgeType.RELEASE) settled.add(r.partition() + ":" + r.offset());
                    System.out.println("ack\t" + r.topic() + "\t" + r.partition() + "\t" + r.offset() + "\t" + count + "\t" + t);
                }
                if (!got.isEmpty()) c.commitSync();
            }
        }
    }
}
