/*
 * Licensed under the Apache License, Version 2.0 (the "License"); you may not use this file except in
 * compliance with the License. You may obtain a copy of the License at
 *
 *     http://www.apache.org/licenses/LICENSE-2.0
 *
 * Unless required by applicable law or agreed to in writing, software distributed under the License is
 * distributed on an "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
 * See the License for the specific language governing permissions and limitations under the License.
 */
package dev.splitaudit.pipeline;

import java.io.IOException;
import java.io.OutputStream;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import org.apache.beam.sdk.transforms.DoFn;

/**
 * An at-least-once JSON-lines file sink: every bundle's rows become one file, written under a hidden
 * temporary name, then atomically renamed to {@code <jobId>-<writerId>-<seq>.jsonl}.
 *
 * <p>The Flink runner finishes the open bundle before it snapshots operator state, so every row emitted
 * before a checkpoint barrier is in a complete file once the checkpoint completes; rows of a bundle cut off
 * by a failure are never visible and are read again from the restored offsets. Readers of the directory
 * only ever see whole files ({@code *.jsonl}); a crash can leave {@code .*.tmp} files behind.
 */
class WriteJsonLinesFn extends DoFn<String, Void> {
  private final String sinkDir;
  private final String jobId;
  private transient Path directory;
  private transient String writerId;
  private transient long fileSequence;
  private transient List<String> bundleRows;

  WriteJsonLinesFn(String sinkDir, String jobId) {
    this.sinkDir = sinkDir;
    this.jobId = jobId;
  }

  @Setup
  public void setup() throws IOException {
    directory = Files.createDirectories(Paths.get(sinkDir));
    writerId = UUID.randomUUID().toString().substring(0, 8);
    fileSequence = 0;
  }

  @StartBundle
  public void startBundle() {
    bundleRows = new ArrayList<>();
  }

  @ProcessElement
  public void processElement(@Element String row) {
    bundleRows.add(row);
  }

  @FinishBundle
  public void finishBundle() throws IOException {
    if (bundleRows.isEmpty()) {
      return;
    }
    String name = String.format(Locale.ROOT, "%s-%s-%06d", jobId, writerId, fileSequence++);
    Path temporary = directory.resolve("." + name + ".tmp");
    try (OutputStream stream = Files.newOutputStream(temporary);
        Writer writer = new OutputStreamWriter(stream, StandardCharsets.UTF_8)) {
      for (String row : bundleRows) {
        writer.write(row);
        writer.write('\n');
      }
      writer.flush();
    }
    Files.move(temporary, directory.resolve(name + ".jsonl"), StandardCopyOption.ATOMIC_MOVE);
    bundleRows.clear();
  }
}
