// A RemoteStorageManager that keeps "remote" segments in a local folder, for the harness's
// tiered cluster (tools/kafka/tiered.py): Kafka ships its own (LocalTieredStorage) only in test
// jars. Each copied segment is a folder <dir>/<topic>-<partition>/<startOffset>-<endOffset>-<id>
// holding the segment's files, so what Kafka's RemoteLogManager uploaded is readable afterwards.
// Config: rsm.config.dir (remote.log.storage.manager.impl.prefix defaults to "rsm.config.").

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.Arrays;
import java.util.Comparator;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;

import org.apache.kafka.server.log.remote.storage.LogSegmentData;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteStorageException;
import org.apache.kafka.server.log.remote.storage.RemoteStorageManager;

public class DirRemoteStorage implements RemoteStorageManager {
    private Path root;

    @Override
    public void configure(Map<String, ?> configs) {
        root = Paths.get(String.valueOf(configs.get("dir")));
    }

    private Path folder(RemoteLogSegmentMetadata m) {
        var id = m.remoteLogSegmentId();
        var tp = id.topicIdPartition().topicPartition();
        return root.resolve(tp.topic() + "-" + tp.partition())
                   .resolve(m.startOffset() + "-" + m.endOffset() + "-" + id.id());
    }

    @Override
    public Optional<RemoteLogSegmentMetadata.CustomMetadata> copyLogSegmentData(RemoteLogSegmentMetadata m, LogSegmentData d)
            throws RemoteStorageException {
        try {
            Path to = Files.createDirectories(folder(m));
            Files.copy(d.logSegment(), to.resolve("segment.log"), StandardCopyOption.REPLACE_EXISTING);
            Files.copy(d.offsetIndex(), to.resolve("segment.index"), StandardCopyOption.REPLACE_EXISTING);
            Files.copy(d.timeIndex(), to.resolve("segment.timeindex"), StandardCopyOption.REPLACE_EXISTING);
            if (d.transactionIndex().isPresent())
                Files.copy(d.transactionIndex().get(), to.resolve("segment.txnindex"), StandardCopyOption.REPLACE_EXISTING);
            Files.copy(d.producerSnapshotIndex(), to.resolve("segment.snapshot"), StandardCopyOption.REPLACE_EXISTING);
            ByteBuffer epochs = d.leaderEpochIndex().duplicate();
            byte[] bytes = new byte[epochs.remaining()];
            epochs.get(bytes);
            Files.write(to.resolve("leader-epoch-checkpoint"), bytes);
            return Optional.empty();
        } catch (IOException e) {
            throw new RemoteStorageException(e);
        }
    }

    private InputStream read(Path file, int start, int end) throws RemoteStorageException {
        try {
            byte[] all = Files.readAllBytes(file);
            int stop = Math.min(all.length, end == Integer.MAX_VALUE ? all.length : end + 1);
            return new ByteArrayInputStream(Arrays.copyOfRange(all, Math.min(start, stop), stop));
        } catch (IOException e) {
            throw new RemoteStorageException(e);
        }
    }

    @Override
    public InputStream fetchLogSegment(RemoteLogSegmentMetadata m, int start) throws RemoteStorageException {
        return read(folder(m).resolve("segment.log"), start, Integer.MAX_VALUE);
    }

    @Override
    public InputStream fetchLogSegment(RemoteLogSegmentMetadata m, int start, int end) throws RemoteStorageException {
        return read(folder(m).resolve("segment.log"), start, end);
    }

    @Override
    public InputStream fetchIndex(RemoteLogSegmentMetadata m, IndexType type) throws RemoteStorageException {
        String name = switch (type) {
            case OFFSET -> "segment.index";
            case TIMESTAMP -> "segment.timeindex";
            case TRANSACTION -> "segment.txnindex";
            case PRODUCER_SNAPSHOT -> "segment.snapshot";
            case LEADER_EPOCH -> "leader-epoch-checkpoint";
        };
        return read(folder(m).resolve(name), 0, Integer.MAX_VALUE);
    }

    @Override
    public void deleteLogSegmentData(RemoteLogSegmentMetadata m) throws RemoteStorageException {
        try (Stream<Path> files = Files.walk(folder(m))) {
            files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            throw new RemoteStorageException(e);
        }
    }

    @Override
    public void close() {
    }
}
