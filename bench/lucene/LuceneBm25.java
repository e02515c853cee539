// Lucene BM25 exactly as OpenSearch scores ragline's lexical leg: the `body` field
// (contextual header and chunk text as two values, as `copy_to` writes them) analysed by
// Lucene's EnglishAnalyzer (OpenSearch's "english"), BM25Similarity(k1, b), and the
// query built the way a `match` query builds it (QueryBuilder.createBooleanQuery, OR).
//
// Used by bench/tune_hybrid.py (Debian's liblucene8-java: OpenSearch 1.x's Lucene line):
//   javac -cp '/usr/share/java/*' -d OUT LuceneBm25.java
//   java -cp 'OUT:/usr/share/java/*' LuceneBm25 docs.tsv queries.tsv hits.tsv [n k1 b]
// docs.tsv: id <TAB> header <TAB> text; queries.tsv: qid <TAB> text (tabs and newlines
// already replaced by spaces). Writes qid <TAB> id <TAB> score, best first, n per query.
import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.analysis.en.EnglishAnalyzer;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.StringField;
import org.apache.lucene.document.TextField;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.search.similarities.BM25Similarity;
import org.apache.lucene.store.ByteBuffersDirectory;
import org.apache.lucene.util.QueryBuilder;

public final class LuceneBm25 {
  public static void main(String[] args) throws Exception {
    int n = args.length > 3 ? Integer.parseInt(args[3]) : 100;
    float k1 = args.length > 4 ? Float.parseFloat(args[4]) : 1.2f;
    float b = args.length > 5 ? Float.parseFloat(args[5]) : 0.75f;
    Analyzer analyzer = new EnglishAnalyzer();
    BM25Similarity sim = new BM25Similarity(k1, b);
    ByteBuffersDirectory dir = new ByteBuffersDirectory();
    IndexWriterConfig cfg = new IndexWriterConfig(analyzer).setSimilarity(sim);
    try (IndexWriter w = new IndexWriter(dir, cfg);
        BufferedReader in = Files.newBufferedReader(Paths.get(args[0]), StandardCharsets.UTF_8)) {
      String line;
      while ((line = in.readLine()) != null) {
        String[] p = line.split("\t", -1);
        Document d = new Document();
        d.add(new StringField("id", p[0], Field.Store.YES));
        if (p.length > 1 && !p[1].isEmpty()) {
          d.add(new TextField("body", p[1], Field.Store.NO));
        }
        if (p.length > 2) {
          d.add(new TextField("body", p[2], Field.Store.NO));
        }
        w.addDocument(d);
      }
    }
    try (DirectoryReader reader = DirectoryReader.open(dir);
        BufferedReader in = Files.newBufferedReader(Paths.get(args[1]), StandardCharsets.UTF_8);
        BufferedWriter out = Files.newBufferedWriter(Paths.get(args[2]), StandardCharsets.UTF_8)) {
      IndexSearcher searcher = new IndexSearcher(reader);
      searcher.setSimilarity(sim);
      QueryBuilder qb = new QueryBuilder(analyzer);
      String line;
      while ((line = in.readLine()) != null) {
        String[] p = line.split("\t", 2);
        Query q = qb.createBooleanQuery("body", p.length > 1 ? p[1] : "");
        if (q == null) {
          continue;
        }
        TopDocs top = searcher.search(q, n);
        for (ScoreDoc sd : top.scoreDocs) {
          out.write(p[0] + "\t" + searcher.doc(sd.doc).get("id") + "\t" + sd.score + "\n");
        }
      }
    }
  }
}
