"""tools/make_geo_samples.py: what it builds, and that samples/geo-kb is what it builds."""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

import pytest

from evaluation.questions import questions_load
from tests.harness import ROOT
from tools.make_geo_samples import FONT_PATH, FontMissing, samples_build

CHECKED_IN = ROOT / "samples" / "geo-kb"
PAGE_COUNTS = {
    "reports/porphyry-copper-model.pdf": 5,
    "reports/QSL-2023-drillhole-assays.pdf": 4,
    "reports/ZK-0815 钻孔地质编录.pdf": 4,
    "reports/sampling-qaqc-procedure.pdf": 5,
    "scans/ZK-1042 野外备忘录扫描件.pdf": 2,
}
DOCX = "reports/青山岭2024年度勘查工作总结.docx"
TXT = "notes/AP-3 化探异常查证记录.txt"
NOTES = ("00-index.md", "术语表 Glossary.md")
SCAN = "scans/ZK-1042 野外备忘录扫描件.pdf"

needs_generator = pytest.mark.skipif(
    not FONT_PATH.is_file(), reason=f"CJK font {FONT_PATH} missing: "
                                    "apt-get install fonts-wqy-microhei")


def _libraries():
    for module, package in (("fpdf", "fpdf2"), ("PIL", "Pillow"), ("docx", "python-docx"),
                            ("pypdfium2", "pypdfium2")):
        pytest.importorskip(module, reason=f"{package} is not installed")


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    _libraries()
    out = tmp_path_factory.mktemp("geo-kb")
    samples_build(out=out)
    return out


def _files(root: Path) -> dict[str, bytes]:
    return {path.relative_to(root).as_posix(): path.read_bytes()
            for path in sorted(root.rglob("*")) if path.is_file()}


def _pdf_pages(data: bytes) -> list[str]:
    import pypdfium2

    document = pypdfium2.PdfDocument(data)
    return [document[index].get_textpage().get_text_range() for index in range(len(document))]


def _scan_pixels(data: bytes) -> list[str]:
    """Hashes of the decoded page images: a scan's content, whatever fpdf2 and zlib made of
    the stream."""
    import pypdfium2

    return [hashlib.sha256(obj.get_bitmap(render=False).to_pil().tobytes()).hexdigest()
            for page in pypdfium2.PdfDocument(data) for obj in page.get_objects()]


def _docx_text(data: bytes) -> list[str]:
    import docx

    document = docx.Document(io.BytesIO(data))
    return ([f"{p.style.name}: {p.text}" for p in document.paragraphs]
            + [" | ".join(cell.text for cell in row.cells)
               for table in document.tables for row in table.rows])


def test_missing_font_is_an_error_that_names_the_package(tmp_path: Path):
    with pytest.raises(FontMissing, match="apt-get install fonts-wqy-microhei"):
        samples_build(out=tmp_path, font_path=tmp_path / "no-such-font.ttc")
    assert not any(tmp_path.iterdir())


@needs_generator
def test_it_writes_every_sample_file_and_stays_small(built: Path):
    files = _files(built)
    assert set(files) == {*PAGE_COUNTS, DOCX, TXT, *NOTES}
    assert sum(len(data) for data in files.values()) < 1_500_000
    assert len(files[SCAN]) < 300_000


@needs_generator
def test_pdfs_have_their_page_counts_and_chinese_text(built: Path):
    files = _files(built)
    pages = {path: _pdf_pages(files[path]) for path in PAGE_COUNTS}
    assert {path: len(texts) for path, texts in pages.items()} == PAGE_COUNTS
    model = pages["reports/porphyry-copper-model.pdf"]
    assert "绢英岩化" in model[1] and "石英（quartz）+ 绢云母（sericite）" in model[1]
    assert "绢英岩化带由" not in model[0] and "斑铜矿–黄铜矿" not in model[0]
    assert "辉绿岩脉（diabase dyke）" in pages["reports/ZK-0815 钻孔地质编录.pdf"][3]


@needs_generator
def test_the_grade_table_spans_pages_with_units_in_its_header(built: Path):
    assays = _pdf_pages(_files(built)["reports/QSL-2023-drillhole-assays.pdf"])
    header = "钻孔 Hole ID 自 From (m) 至 To (m) 长度 Length (m) Cu (%) Au (g/t) Mo (ppm)"
    assert header in assays[1] and header in assays[2]
    assert "ZK-0805 168.0 310.0 142.0 0.44 0.18 182" in assays[1]
    assert "ZK-2002 398.0 426.0 28.0 0.27 0.05 310" in assays[2]
    assert len([line for line in assays[1].splitlines() if line.startswith("ZK-")]) >= 30


@needs_generator
def test_one_pdf_has_a_two_level_outline_and_a_title_another_has_no_title(built: Path):
    import pypdfium2

    files = _files(built)
    model = pypdfium2.PdfDocument(files["reports/porphyry-copper-model.pdf"])
    outline = [(entry.level, entry.get_title(), entry.get_dest().get_index())
               for entry in model.get_toc()]
    assert {level for level, _, _ in outline} == {0, 1}
    assert (0, "2 蚀变分带 Alteration zoning", 1) in outline
    assert (1, "2.2 绢英岩化带 Phyllic zone", 1) in outline
    assert model.get_metadata_dict()["Title"].startswith("斑岩型铜矿床地质特征与找矿标志")
    log = pypdfium2.PdfDocument(files["reports/ZK-0815 钻孔地质编录.pdf"])
    assert log.get_metadata_dict()["Title"] == "" and list(log.get_toc()) == []


@needs_generator
def test_the_scan_is_page_sized_images_without_a_text_layer(built: Path):
    import pypdfium2
    import pypdfium2.raw as pdfium_c

    scan = pypdfium2.PdfDocument(_files(built)[SCAN])
    for page in scan:
        assert page.get_textpage().get_text_range() == ""
        objects = list(page.get_objects())
        assert [obj.type for obj in objects] == [pdfium_c.FPDF_PAGEOBJ_IMAGE]
        width, height = page.get_size()
        assert objects[0].get_bounds() == pytest.approx((0, 0, width, height), abs=0.5)
        assert objects[0].get_px_size() == (1654, 2339)  # A4 at 200 dpi


@needs_generator
def test_the_txt_is_gb18030_and_not_utf8(built: Path):
    data = _files(built)[TXT]
    with pytest.raises(UnicodeDecodeError):
        data.decode("utf-8")
    text = data.decode("gb18030")
    assert "Cu 峰值 1 850 ppm" in text and len(text.split("\n\n")) >= 4


@needs_generator
def test_the_docx_has_nested_headings_and_a_captioned_table(built: Path):
    import docx
    from docx.oxml.ns import qn
    from docx.text.paragraph import Paragraph

    document = docx.Document(io.BytesIO(_files(built)[DOCX]))
    styles = [paragraph.style.name for paragraph in document.paragraphs]
    assert styles.index("Heading 1") < styles.index("Heading 2")
    body = list(document.element.body)
    table_at = next(index for index, element in enumerate(body) if element.tag == qn("w:tbl"))
    caption = Paragraph(body[table_at - 1], document)
    assert caption.style.name == "Caption" and caption.text.startswith("表 1")
    rows = [[cell.text for cell in row.cells] for row in document.tables[0].rows]
    assert rows[0] == ["工作项目", "单位", "设计工作量", "完成工作量", "完成率（%）"]
    assert len(rows) >= 13
    assert ["岩芯钻探", "m", "8000", "7412.6", "92.7"] in rows


@needs_generator
def test_a_rebuild_gives_identical_bytes(built: Path, tmp_path: Path):
    samples_build(out=tmp_path)
    assert _files(tmp_path) == _files(built)


@needs_generator
def test_the_checked_in_samples_are_what_the_generator_makes(built: Path):
    """Byte for byte where this machine's fpdf2, python-docx and zlib match the ones that built
    the copy; otherwise the same files, page counts, page text, scan pixels (these depend on
    Pillow's FreeType: after a Pillow upgrade, rebuild) and DOCX text."""
    made, checked_in = _files(built), _files(CHECKED_IN)
    assert set(checked_in) == set(made), "rebuild: python tools/make_geo_samples.py"
    for path, data in made.items():
        if checked_in[path] == data:
            continue
        if path == SCAN:
            assert _scan_pixels(checked_in[path]) == _scan_pixels(data), path
        elif path.endswith(".pdf"):
            assert _pdf_pages(checked_in[path]) == _pdf_pages(data), path
        elif path.endswith(".docx"):
            assert _docx_text(checked_in[path]) == _docx_text(data), path
        else:
            pytest.fail(f"{path} differs from the generator's output")


def test_geo_questions_point_at_sample_files_and_existing_pages():
    questions = questions_load(path=ROOT / "eval" / "geo-questions.yaml")
    assert 16 <= len(questions) <= 24
    assert 3 <= sum(q.expected_mode == "no_answer" for q in questions) <= 4
    for question in questions:
        for source in question.expected_sources:
            assert (CHECKED_IN / source).is_file(), (question.id, source)
        if question.expected_pages:
            (source,) = question.expected_sources
            assert source.endswith(".pdf"), question.id
            assert max(question.expected_pages) <= PAGE_COUNTS[source], question.id
    paged = {source for q in questions if q.expected_pages for source in q.expected_sources}
    assert {SCAN, "reports/QSL-2023-drillhole-assays.pdf"} <= paged
    unpaged = {source for q in questions if not q.expected_pages
               for source in q.expected_sources}
    assert {DOCX, TXT} <= unpaged
