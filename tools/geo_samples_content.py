"""The text of samples/geo-kb (tools/make_geo_samples.py lays it out as PDF, DOCX, TXT, Markdown).

Facts are specific and appear once, so each eval question has one page that answers it; the
project, company, people and numbers are fictional but geologically plausible.
"""

from __future__ import annotations

PORPHYRY_MODEL = {
    "path": "reports/porphyry-copper-model.pdf",
    "title": "斑岩型铜矿床地质特征与找矿标志 Porphyry Copper Deposits: Geology and Indicators",
    "running_title": "斑岩型铜矿床地质特征与找矿标志",
    "outline": True,
    "page_count": 5,
    "pages": [
        [
            ("title", "斑岩型铜矿床地质特征与找矿标志\nPorphyry Copper Deposits: Geology and "
                      "Prospecting Indicators"),
            ("p", "青山岭铜金矿勘查项目 技术培训资料 TR-03 · 西岭地质勘查有限公司 · 2024 年 6 月"),
            ("h1", "1 概述 Overview"),
            ("h2", "1.1 定义 Definition"),
            ("p", "斑岩型铜矿床（porphyry copper deposit）是与中酸性浅成侵入岩（斑岩体，porphyry "
                  "stock）有关的大型、低品位、细脉浸染状（stockwork and disseminated）铜矿床，常伴生"
                  "钼（Mo）、金（Au）和银（Ag）。全球约 60% 的铜产量和约 95% 的钼产量来自斑岩型矿床，"
                  "因此它是铜勘查的首要目标。"),
            ("h2", "1.2 构造背景 Tectonic setting"),
            ("p", "斑岩型铜矿主要形成于汇聚板块边缘的岩浆弧（magmatic arc）：安第斯型大陆边缘弧"
                  "（如智利 Chuquicamata、El Teniente）和岛弧（如菲律宾 Santo Tomas II）。碰撞后伸展"
                  "环境同样重要，例如青藏高原冈底斯成矿带的驱龙（Qulong）和三江地区的玉龙（Yulong）"
                  "矿床。成矿岩体多为石英二长斑岩、花岗闪长斑岩和石英闪长玢岩，侵位深度一般 1–4 km。"),
            ("h2", "1.3 规模与品位 Tonnage and grade"),
            ("p", "典型斑岩型铜矿床矿石量 1 亿吨至 50 亿吨（100 Mt – 5 Gt），铜品位 Cu 0.2–1.0 %，"
                  "钼品位 Mo 0.005–0.03 %，金品位 Au 0.1–1.0 g/t。江西德兴铜矿是中国东部最大的斑岩"
                  "型铜矿，以富金著称。单个矿床的经济价值取决于规模、品位和可露天开采的剥采比"
                  "（strip ratio），而不是局部高品位。"),
        ],
        [
            ("h1", "2 蚀变分带 Alteration zoning"),
            ("p", "经典的 Lowell–Guilbert（1970）模型把斑岩体周围的热液蚀变由内向外划分为钾硅酸盐化"
                  "带、绢英岩化带、泥化带和青磐岩化带。各带常相互叠加，野外编录时应记录主导蚀变和"
                  "叠加关系。"),
            ("h2", "2.1 钾硅酸盐化带 Potassic zone"),
            ("p", "位于斑岩体核部，特征矿物为钾长石（K-feldspar）+ 次生黑云母（secondary "
                  "biotite）+ 磁铁矿（magnetite），形成温度高于 450 °C。钾化带常伴生斑铜矿–黄铜矿"
                  "（bornite–chalcopyrite）组合，是高品位铜钼金矿化最集中的部位。"),
            ("h2", "2.2 绢英岩化带 Phyllic zone"),
            ("p", "绢英岩化（phyllic 或 QSP alteration）由石英（quartz）+ 绢云母（sericite）+ "
                  "黄铁矿（pyrite）组成，叠加在钾化带外侧和上部。黄铁矿含量可达 5–10 vol%，"
                  "原生磁铁矿被破坏，因而在磁测图上表现为磁力低。"),
            ("h2", "2.3 泥化带 Argillic zone"),
            ("p", "中级泥化以高岭石（kaolinite）和蒙脱石（montmorillonite）为主；高级泥化"
                  "（advanced argillic）以明矾石（alunite）、叶蜡石（pyrophyllite）、地开石"
                  "（dickite）为特征，在斑岩体上方形成岩帽（lithocap），可掩盖深部的斑岩矿体。"),
            ("h2", "2.4 青磐岩化带 Propylitic zone"),
            ("p", "青磐岩化是最外侧的蚀变带，特征矿物为绿泥石（chlorite）+ 绿帘石（epidote）+ "
                  "方解石（calcite）± 钠长石，可从矿体向外延伸 1–3 km。单独出现的青磐岩化只说明"
                  "靠近热液系统的边缘，需要结合化探判断矿化中心方向。"),
        ],
        [
            ("h1", "3 矿化特征 Mineralization"),
            ("h2", "3.1 脉系 Vein types"),
            ("p", "Gustafson 与 Hunt（1975）在 El Salvador 矿床建立的脉系分类被广泛采用："
                  "EB 脉为早期黑云母细脉；A 脉为不规则的石英–钾长石 ± 硫化物脉，无中缝；"
                  "B 脉为边界平直的石英–辉钼矿脉，辉钼矿（molybdenite）常沿中缝（centre line）分布；"
                  "D 脉为晚期黄铁矿–石英脉，两侧有绢云母蚀变晕（sericite halo）。B 脉密度高的地段通常"
                  "钼品位也高。"),
            ("h2", "3.2 硫化物分带 Sulfide zoning"),
            ("p", "硫化物由内向外依次为：核部斑铜矿 + 黄铜矿（bn + cp），向外黄铜矿 + 黄铁矿，再向外为"
                  "黄铁矿晕（pyrite shell，黄铁矿 5–15 vol%、铜很低），最外侧出现含铅锌银的脉体。"
                  "黄铜矿与黄铁矿的比值（cp/py）向矿化中心升高，可用于钻孔中判断方向。"),
            ("h2", "3.3 表生富集 Supergene profile"),
            ("p", "在风化作用下，硫化物被氧化，铜向下迁移，形成自上而下的表生剖面：淋滤帽"
                  "（leached cap，针铁矿 goethite、黄钾铁矾 jarosite、赤铁矿 hematite 组成的蜂窝状"
                  "褐铁矿 boxwork）；氧化带（孔雀石 malachite、蓝铜矿 azurite、硅孔雀石 "
                  "chrysocolla）；次生富集带（supergene enrichment blanket，辉铜矿 chalcocite 和铜蓝 "
                  "covellite 交代原生硫化物，品位可达原生矿的 2–3 倍）；其下为原生带（hypogene）。"),
        ],
        [
            ("h1", "4 找矿标志 Prospecting indicators"),
            ("h2", "4.1 地质标志 Geological indicators"),
            ("p", "多期次侵位的斑岩体和岩枝、热液角砾岩筒（breccia pipe）、面积大于 1 km² 的"
                  "同心状蚀变分带，以及网脉（stockwork）密度大于每米 5 条的地段，都是斑岩型铜矿的"
                  "直接找矿标志。地表的褐铁矿化蜂窝构造提示下方可能有次生富集带。"),
            ("h2", "4.2 地球化学标志 Geochemical indicators"),
            ("p", "土壤和水系沉积物中 Cu、Mo、Au 组成的异常是最常用的化探找矿标志：内带为 "
                  "Cu–Mo–Au，外带为 Pb–Zn–Ag–Mn，呈环状分带。化探异常（geochemical anomaly）面积"
                  "大于 1 km²、Cu 峰值超过 1000 ppm 且具有内外带分带时，应优先进行钻探验证。"),
            ("h2", "4.3 地球物理标志 Geophysical indicators"),
            ("p", "激发极化法（induced polarization, IP）测量中，绢英岩化带中的黄铁矿晕引起环状高"
                  "极化率异常，极化率（chargeability）一般大于 10 mV/V，而矿化中心的极化率反而略低。"
                  "磁法上，钾化带的磁铁矿形成磁力高，外侧绢英岩化带因磁铁矿被破坏而表现为环状磁力低。"),
            ("h2", "4.4 遥感标志 Remote-sensing indicators"),
            ("p", "ASTER 短波红外（SWIR）波段可识别绢云母（Al–OH 吸收约 2200 nm）、明矾石和绿泥石–"
                  "绿帘石（Fe/Mg–OH 吸收约 2330 nm），可见光近红外波段可圈出铁染（limonite）蚀变，"
                  "适合在植被稀少地区快速圈定蚀变分带。"),
        ],
        [
            ("h1", "5 勘查工作程序 Exploration workflow"),
            ("h2", "5.1 勘查阶段 Stages"),
            ("p", "中国固体矿产勘查分为普查、详查和勘探三个阶段，分别对应推断资源量（inferred）、控制"
                  "资源量（indicated）和探明资源量（measured）。青山岭项目的设计工程间距为：推断资源量 "
                  "200 m × 200 m，控制资源量 100 m × 100 m，探明资源量 50 m × 50 m。"),
            ("h2", "5.2 钻探要求 Drilling"),
            ("p", "钻孔以倾角 -60° 至 -70° 的斜孔为主，垂直于主要矿化带布置。上部采用 HQ 口径"
                  "（岩芯直径 63.5 mm），孔深超过约 200 m 或遇破碎带后换径为 NQ（47.6 mm）。矿心采取"
                  "率不得低于 80%，岩心采取率不得低于 65%；每 50 m 进行一次孔斜测量。"),
            ("h2", "5.3 资料整理 Data management"),
            ("p", "钻孔编录、采样、分析和质量控制资料统一录入项目数据库，编号规则为 ZK-线号孔号"
                  "（例如 ZK-0815 表示 8 号勘探线第 15 号孔）。每个勘查阶段结束时提交阶段报告，"
                  "并附 QA/QC 质量评价和资源量估算说明。"),
        ],
    ],
}

ASSAY_HEADER = ("钻孔 Hole ID", "自 From (m)", "至 To (m)", "长度 Length (m)", "Cu (%)",
                "Au (g/t)", "Mo (ppm)")
# hole, from m, to m, Cu %, Au g/t, Mo ppm — composites at a 0.20 % Cu cut-off.
ASSAY_ROWS = """
ZK-0401 12.0 46.0 0.31 0.08 45 | ZK-0401 118.0 164.0 0.27 0.06 88 | ZK-0401 210.0 236.0 0.21 0.03 140
ZK-0402 36.0 118.0 0.41 0.12 96 | ZK-0402 206.0 262.0 0.29 0.07 132
ZK-0402 330.0 352.0 0.22 0.04 210 | ZK-0405 58.0 92.0 0.24 0.05 61
ZK-0405 140.0 176.0 0.30 0.07 118 | ZK-0405 244.0 270.0 0.23 0.05 190
ZK-0801 24.0 78.0 0.58 0.19 74 | ZK-0801 142.0 288.0 0.36 0.14 156 | ZK-0801 330.0 372.0 0.27 0.10 205
ZK-0805 40.0 96.0 0.93 0.21 68 | ZK-0805(incl.) 52.0 74.0 1.46 0.30 60
ZK-0805 168.0 310.0 0.44 0.18 182 | ZK-0805 378.0 420.0 0.26 0.09 245
ZK-0815 42.0 98.0 1.08 0.24 55 | ZK-0815 98.0 180.0 0.33 0.11 120
ZK-0815 318.0 402.0 0.71 0.36 164 | ZK-0815(incl.) 338.0 362.0 1.05 0.52 190
ZK-0815 402.0 455.0 0.38 0.16 230 | ZK-1203 18.0 64.0 0.35 0.09 40
ZK-1203 196.0 284.0 0.47 0.22 138 | ZK-1203 330.0 366.0 0.29 0.13 172
ZK-1207 30.0 88.0 0.84 0.27 52 | ZK-1207(incl.) 40.0 62.0 1.21 0.35 48
ZK-1207 140.0 212.0 0.52 0.31 144 | ZK-1207 212.0 236.0 1.36 0.88 265
ZK-1207 236.0 348.0 0.49 0.27 176 | ZK-1207 412.0 476.0 0.31 0.12 98
ZK-1208 54.0 120.0 0.62 0.18 70 | ZK-1208 208.0 300.0 0.41 0.25 150
ZK-1208 356.0 404.0 0.34 0.19 201 | ZK-1208 468.0 492.0 0.22 0.08 160
ZK-1601 8.0 40.0 0.28 0.33 22 | ZK-1601 96.0 150.0 0.37 0.41 35 | ZK-1601 226.0 260.0 0.21 0.15 48
ZK-1605 72.0 114.0 0.25 0.11 30 | ZK-1605 188.0 246.0 0.32 0.17 84
ZK-2002 150.0 198.0 0.23 0.06 112 | ZK-2002 262.0 330.0 0.36 0.10 226
ZK-2002 398.0 426.0 0.27 0.05 310
"""


def _assay_rows() -> list[tuple[str, ...]]:
    rows = []
    for entry in ASSAY_ROWS.replace("\n", "|").split("|"):
        if not entry.strip():
            continue
        hole, start, end, cu, au, mo = entry.split()
        length = float(end) - float(start)
        rows.append((hole.replace("(incl.)", " 其中 incl."), start, end, f"{length:.1f}", cu, au,
                     mo))
    return rows


DRILLHOLE_ASSAYS = {
    "path": "reports/QSL-2023-drillhole-assays.pdf",
    "title": "青山岭矿区 2023 年度钻孔样品分析结果 Drill-hole Assay Results 2023",
    "running_title": "青山岭矿区 2023 年度钻孔样品分析结果",
    "page_count": 4,
    "pages": [
        [
            ("title", "青山岭矿区 2023 年度钻孔样品分析结果\nQingshanling Drill-hole Assay Results "
                      "2023"),
            ("h1", "1 钻探工作概况 Drilling campaign"),
            ("p", "2023 年 4 月 10 日至 11 月 26 日，项目在 4、8、12、16、20 号勘探线施工金刚石岩芯钻孔"
                  " 12 个，总进尺 7 386.4 m，平均孔深 615.5 m，最深孔为 ZK-1207（702.8 m）。共采集"
                  "基本分析样 3 412 件，另插入 QA/QC 质控样 389 件（插入率 11.4%）。"),
            ("h1", "2 分析方法 Analytical methods"),
            ("p", "样品由滇中矿产测试中心（ISO/IEC 17025 认可实验室）分析：Cu、Mo 采用四酸消解 "
                  "ICP-OES，Cu > 1% 的样品用矿石级方法复测；Au 采用 30 g 火试金–原子吸收（fire assay "
                  "AAS）。本报告中的 Cu 以 %、Au 以 g/t、Mo 以 ppm 表示。"),
            ("h1", "3 见矿区间圈定规则 Compositing rules"),
            ("p", "见矿区间按边界品位（cut-off grade）Cu 0.20 % 圈定，长度加权平均；允许的最大连续"
                  "夹石（internal dilution）厚度为 6 m，最小见矿长度为 8 m；不做特高品位处理（no top "
                  "cut）。表中长度为沿钻孔的视厚度（downhole length），按钻孔与矿体产状估算，真厚度约"
                  "为视厚度的 70%–85%。标注“其中 incl.”的行是上一区间内部 Cu ≥ 1.0 % 的高品位段。"),
            ("p", "坐标系统为 CGCS2000，高程基准为 1985 国家高程基准。全部钻孔的孔口坐标、方位角和"
                  "倾角见钻孔一览表（另册）。"),
        ],
        [
            ("h1", "4 主要见矿区间 Significant intercepts"),
            ("p", "表 1 2023 年度钻孔主要见矿区间（边界品位 Cu 0.20 %）"),
            ("table", ASSAY_HEADER, _assay_rows(), (30, 22, 22, 26, 20, 20, 20)),
            ("h1", "5 高品位段说明 High-grade zones"),
            ("p", "2023 年度最好的见矿段位于 12 号勘探线：ZK-1207 自 212.0 m 至 236.0 m 见 24.0 m @ "
                  "Cu 1.36 %、Au 0.88 g/t，对应钾化带中密集的 B 脉和斑铜矿–黄铜矿细脉。最长的连续"
                  "见矿区间为 ZK-0801 的 142.0–288.0 m（146.0 m @ Cu 0.36 %）。"),
            ("p", "8 号线 ZK-0805 和 ZK-0815 的浅部高品位段（Cu 0.93–1.08 %）属于次生富集带，"
                  "辉铜矿含量高，需单独圈定矿体并进行选矿试验。"),
        ],
        [
            ("h1", "6 结论与建议 Conclusions and recommendations"),
            ("p", "8–12 号勘探线之间已控制一个连续的矿化体：走向长约 1.1 km，宽 400–600 m，垂向延深"
                  "超过 450 m，深部未封闭。16 号线 ZK-1601 的 Au/Cu 比值明显高于其他钻孔，显示东南部"
                  "可能存在富金的斑岩中心。"),
            ("p", "质量控制方面，批次 QSL23-117 的 Au 标准样结果超出认定值 +3SD，该批 40 件样品已"
                  "全部重新分析，复测结果已替换原始数据；其余批次的标准样、空白样和重复样均合格。"),
            ("p", "建议 2024 年：（1）在 8–12 号线把钻孔间距加密至 100 m × 100 m，以求得控制资源量；"
                  "（2）在 ZK-1207 下方布置一个 900 m 深孔，验证 600 m 以下的钾化带；（3）采集次生"
                  "富集带和原生矿石各一件选矿试验样，开展浮选（flotation）条件试验；（4）补充 "
                  "20 号线以北的激电测量。"),
        ],
    ],
}

ZK0815_LOG = {
    "path": "reports/ZK-0815 钻孔地质编录.pdf",
    "running_title": "ZK-0815 钻孔地质编录",
    "page_count": 4,
    "pages": [
        [
            ("title", "ZK-0815 钻孔地质编录\nDrill Hole Log ZK-0815"),
            ("h1", "1 钻孔基本信息 Collar information"),
            ("p", "孔号 ZK-0815，位于 8 号勘探线。孔口坐标 X = 2 745 312.6，Y = 35 486 207.4"
                  "（CGCS2000），孔口标高 1 862.3 m。设计方位角 225°，设计倾角 -65°，设计孔深 600 m，"
                  "终孔孔深 602.5 m。2023 年 6 月 12 日开孔，7 月 29 日终孔，由滇西地勘钻探工程队使用 "
                  "XY-44 型岩芯钻机施工。"),
            ("p", "口径：0–180.3 m 为 HQ，180.3–602.5 m 为 NQ。全孔平均岩芯采取率 94.6%，矿心采取率 "
                  "96.2%。孔斜每 50 m 用电子多点测斜仪测量一次，终孔处方位角偏差 +3.2°，倾角变缓 1.8°。"),
            ("p", "编录人：李明轩；审核人：王嘉宁。编录内容包括岩性、蚀变、矿化、构造、RQD 和"
                  "采样位置，照片按 3 m 一箱拍摄并上传数据库。"),
        ],
        [
            ("h1", "2 编录记录：0–180.3 m Log 0–180.3 m"),
            ("p", "0–3.2 m：第四系残坡积物（colluvium），棕红色黏土夹碎石，不采样。"),
            ("p", "3.2–41.6 m：淋滤帽（leached cap）。强褐铁矿化石英二长斑岩，黄钾铁矾（jarosite）"
                  "和针铁矿呈蜂窝状 boxwork 充填原黄铁矿孔洞，铜被淋失，Cu 一般小于 0.05 %。"),
            ("p", "41.6–97.8 m：次生富集带（supergene enrichment）。灰黑色辉铜矿（chalcocite）呈"
                  "烟灰状薄膜包裹黄铁矿和黄铜矿，局部见铜蓝（covellite）；裂隙发育，RQD 35–50。该段"
                  "是本孔品位最高的浅部矿段。"),
            ("p", "97.8–180.3 m：绢英岩化石英二长斑岩（QSP alteration）。长石全部被绢云母交代，"
                  "黄铁矿 6–8 vol%，D 脉密集（每米 8–12 条），黄铜矿少量，呈浸染状。180.3 m 处换径为 "
                  "NQ。"),
        ],
        [
            ("h1", "3 编录记录：180.3–455.0 m Log 180.3–455.0 m"),
            ("p", "180.3–318.0 m：绢英岩化向钾化过渡带。次生黑云母逐渐增多，绢云母叠加减弱，"
                  "黄铁矿降至 2–3 vol%，黄铜矿 0.5–1 vol%，A 脉开始出现。"),
            ("p", "318.0–402.0 m：钾化带（potassic zone）主矿段。岩石为钾长石化、黑云母化石英"
                  "二长斑岩，磁铁矿 3–5 vol%。A 脉与 B 脉密集，B 脉中缝见辉钼矿（molybdenite）；"
                  "斑铜矿与黄铜矿之比约为 1:3，338–362 m 斑铜矿最富。RQD 70–85。"),
            ("p", "402.0–455.0 m：钾化带下部。B 脉密度降低，辉钼矿相对增多，以黄铜矿为主，斑铜矿"
                  "少见；见两条宽 5–10 cm 的石英–硬石膏（anhydrite）脉。"),
        ],
        [
            ("h1", "4 编录记录：455.0–602.5 m 及结论 Log 455.0–602.5 m and summary"),
            ("p", "455.0–463.4 m：辉绿岩脉（diabase dyke），灰绿色，细粒辉绿结构，切穿矿化斑岩，"
                  "为成矿后（post-mineral）岩脉，无矿化，上下接触带具冷凝边。"),
            ("p", "463.4–602.5 m：弱钾化花岗闪长岩（granodiorite），仅见稀疏黄铜矿细脉，"
                  "Cu 一般小于 0.15 %，向下矿化明显减弱。"),
            ("p", "终孔原因：已达到设计孔深，且 463.4 m 以下矿化减弱至边界品位以下，矿体下界已"
                  "控制。"),
            ("p", "结论：ZK-0815 揭示两个矿段——41.6–97.8 m 的次生富集矿段和 318.0–455.0 m 的钾化带"
                  "原生矿段；辉绿岩脉把原生矿段截断，建议在 8 号线向北东 100 m 布置 ZK-0817 追索"
                  "辉绿岩脉另一侧的矿体。"),
        ],
    ],
}

SAMPLING_QAQC = {
    "path": "reports/sampling-qaqc-procedure.pdf",
    "title": "青山岭项目采样与 QA/QC 质量控制规程 Sampling and QA/QC Procedure v2.1",
    "running_title": "青山岭项目采样与 QA/QC 质量控制规程 v2.1",
    "page_count": 5,
    "pages": [
        [
            ("title", "青山岭项目采样与 QA/QC 质量控制规程\nSampling and QA/QC Procedure, "
                      "version 2.1"),
            ("h1", "1 适用范围 Scope"),
            ("p", "本规程适用于青山岭铜金矿勘查项目的全部岩芯样品，自 2024 年 3 月 1 日起执行，"
                  "替代 2022 年的 v1.4 版本。规程由项目技术负责人审批，修改须记录版本号。"),
            ("h1", "2 岩芯采样 Core sampling"),
            ("p", "采用半岩芯采样（half-core sampling）：用金刚石锯（diamond saw）沿编录人员画出的"
                  "切割线把岩芯一分为二，一半送样，另一半留岩芯库存档。标准样长为 2.0 m；"
                  "最短样长 0.5 m，最长样长 3.0 m。样品不得跨越岩性、蚀变带或矿化界线。"),
            ("p", "样品编号使用预印的三联样品票，格式为 QSL-6 位流水号（例如 QSL-104233），一联放入"
                  "样袋，一联钉在岩芯箱上，一联留在采样登记簿中。"),
        ],
        [
            ("h1", "3 样品制备 Sample preparation"),
            ("p", "样品在 105 °C 下烘干后，用颚式破碎机粗碎至 70% 通过 2 mm（-10 目），用二分器"
                  "（riffle splitter）缩分出 1 kg，再用 LM2 型振动磨细磨至 85% 通过 75 µm（-200 目）。"
                  "剩余粗副样（coarse reject）保存 2 年，分析后的粉末副样（pulp）保存 5 年。"),
            ("p", "实验室每 50 件样品做一次筛析检查（sieve test），细磨不合格时整批重新细磨。"),
            ("p", "目视高品位样品（可见斑铜矿、块状黄铜矿）之后，破碎机和振动磨须用无矿石英砂清洗，"
                  "以防交叉污染（cross-contamination）。"),
        ],
        [
            ("h1", "4 质控样插入 QA/QC insertion"),
            ("p", "标准样（certified reference material, CRM）插入率为 1/20（5%），三种标准样轮流"
                  "使用：QSL-CRM-L（Cu 0.251 %、Au 0.18 g/t）、QSL-CRM-M（Cu 0.612 %、Au 0.45 g/t）、"
                  "QSL-CRM-H（Cu 1.486 %、Au 1.02 g/t）。标准样应以与岩芯样相同的样袋和编号送样，"
                  "实验室不得知道其身份（blind insertion）。"),
            ("p", "空白样（blank）插入率为 1/30，并且每个目视高品位样品之后必须紧跟一个空白样；"
                  "空白样使用经过验证的无矿粗粒石英砂（coarse blank），以同时检查制样污染。"),
            ("p", "重复样（duplicates）分三类，各按 1/40 插入：野外重复样（field duplicate，另一半"
                  "岩芯再切取的四分之一岩芯）、粗副样重复样（coarse duplicate）和粉末重复样（pulp "
                  "duplicate）。另外每季度抽取 5% 的粉末副样送第二家实验室做外检（umpire check）。"),
        ],
        [
            ("h1", "5 合格标准 Acceptance criteria"),
            ("p", "标准样：结果在认定值 ±2SD 以内为合格；超出 ±2SD 但在 ±3SD 以内为警告（warning）；"
                  "超出 ±3SD，或连续两个标准样偏向同一侧并超出 ±2SD，判定为失败（failure），"
                  "须把前后两个合格标准样之间的全部样品重新分析（re-assay）。"),
            ("p", "空白样：Cu 应小于 0.005 %，Au 应小于 0.025 g/t（即检出限的 5 倍）；超出时检查"
                  "前一个样品是否为高品位样品，并对相邻的 10 件样品重新制样分析。"),
            ("p", "重复样：以 HARD（half absolute relative difference，半绝对相对差）评价，90% 的"
                  "样品对应满足：野外重复样 HARD ≤ 20%，粗副样重复样 HARD ≤ 15%，粉末重复样 "
                  "HARD ≤ 10%。"),
        ],
        [
            ("h1", "6 分析方法与数据管理 Analysis and data management"),
            ("p", "Cu、Mo、Ag 采用四酸消解 ICP-OES；Cu > 1% 时用矿石级方法复测。Au 采用 30 g "
                  "火试金–原子吸收（fire assay with AAS finish）；Au > 10 g/t 时用重量法（gravimetric）"
                  "复测。"),
            ("p", "监管链（chain of custody）：样袋用编号封条封口，由项目车辆直接送至实验室，"
                  "送样单一式两份；实验室签收后返回收样确认。"),
            ("p", "数据管理：分析结果只能由数据库管理员从实验室证书（certificate）导入数据库，"
                  "禁止手工录入。QA/QC 负责人每月编制质控月报，附标准样控制图（control chart）、"
                  "空白样图和重复样 HARD 图。"),
        ],
    ],
}

PDF_DOCUMENTS = [PORPHYRY_MODEL, DRILLHOLE_ASSAYS, ZK0815_LOG, SAMPLING_QAQC]

# Lines of each scanned page; the first is the page heading, "" is a blank line.
SCAN = {
    "path": "scans/ZK-1042 野外备忘录扫描件.pdf",
    "pages": [
        [
            "青山岭项目 野外工作备忘录 Field Memo",
            "编号 No. FM-2024-031",
            "日期 Date: 2024-05-18    记录人: 赵书衡",
            "",
            "钻孔 ZK-1042（12 号勘探线，方位角 45°，倾角 -70°）",
            "",
            "在孔深 356.4 m 处见块状黄铜矿-斑铜矿脉",
            "(massive chalcopyrite-bornite vein)，",
            "视厚度 1.2 m，围岩为强钾化石英二长斑岩。",
            "手持 XRF 读数 Cu 约 4.8 %。",
            "",
            "已通知实验室对 355-358 m 的样品加急分析",
            "(rush assay)，结果预计 5 月 25 日返回。",
            "",
            "Drill hole ZK-1042 intersected a massive",
            "chalcopyrite-bornite vein at 356.4 m depth,",
            "1.2 m wide; handheld XRF Cu about 4.8 %.",
        ],
        [
            "补充记录 Addendum",
            "编号 No. FM-2024-031-A",
            "日期 Date: 2024-05-26    记录人: 赵书衡",
            "",
            "ZK-1042 于孔深 418.0 m 遇断层破碎带塌孔",
            "(hole collapse)，两次扫孔均未成功，",
            "决定提前终孔。原设计孔深 500 m。",
            "",
            "建议在 ZK-1042 东北侧 50 m 布置补充孔",
            "ZK-1043，设计孔深 550 m，穿过该断层。",
            "",
            "岩芯已全部运至岩芯库 B 区第 17 排存放。",
            "",
            "ZK-1042 was stopped early at 418.0 m after",
            "the hole collapsed in a fault zone; the",
            "planned depth was 500 m. Follow-up hole",
            "ZK-1043 is proposed 50 m to the north-east.",
        ],
    ],
}

WORK_QUANTITIES = [
    # item, unit, planned, done
    ("1:10 000 地质填图", "km²", "12.0", "12.5"),
    ("1:2 000 勘探线剖面测量", "km", "8.0", "8.4"),
    ("土壤地球化学测量", "件", "2400", "2568"),
    ("激电中梯扫面 IP", "km²", "6.0", "6.0"),
    ("激电测深", "点", "120", "112"),
    ("地面高精度磁测", "km²", "10.0", "10.8"),
    ("槽探", "m³", "1500", "1326"),
    ("岩芯钻探", "m", "8000", "7412.6"),
    ("岩芯编录", "m", "8000", "7412.6"),
    ("基本分析样", "件", "3600", "3755"),
    ("组合分析样", "件", "180", "186"),
    ("岩矿鉴定（薄片）", "片", "120", "134"),
    ("小体重样", "件", "300", "312"),
    ("QA/QC 质控样", "件", "540", "563"),
    ("外检样", "件", "180", "188"),
]


def _work_quantity_rows() -> list[tuple[str, ...]]:
    return [(item, unit, planned, done, f"{float(done) / float(planned) * 100:.1f}")
            for item, unit, planned, done in WORK_QUANTITIES]


DOCX = {
    "path": "reports/青山岭2024年度勘查工作总结.docx",
    "title": "青山岭铜金矿 2024 年度勘查工作总结",
    "blocks": [
        ("h1", "1 项目概况"),
        ("h2", "1.1 位置与交通"),
        ("p", "青山岭铜金矿勘查区位于滇西高原，距县城 46 km，有简易公路通达矿区。区内海拔 1 750–"
              "2 380 m，雨季为每年 6 月至 10 月，雨季期间山区道路经常中断。"),
        ("h2", "1.2 探矿权"),
        ("p", "探矿权人为西岭地质勘查有限公司，勘查面积 12.46 km²，有效期至 2026 年 8 月 31 日。"
              "2024 年度为详查阶段第二年。"),
        ("h1", "2 完成工作量"),
        ("p", "2024 年度野外工作自 3 月 5 日开始，至 12 月 12 日结束。主要实物工作量见表 1；"
              "钻探因雨季停工 38 天，未完成设计工作量。"),
        ("caption", "表 1 2024 年度主要实物工作量完成情况"),
        ("table", ("工作项目", "单位", "设计工作量", "完成工作量", "完成率（%）"),
         _work_quantity_rows()),
        ("h1", "3 主要成果"),
        ("h2", "3.1 地质成果"),
        ("p", "在矿区北东部新发现第二个斑岩体 P2，出露面积约 0.35 km²，受北东向 F3 断裂控制，"
              "岩体边部见强绢英岩化和网脉状黄铜矿化。"),
        ("h2", "3.2 物探与化探成果"),
        ("p", "激电中梯扫面在 P2 斑岩体周围圈出直径约 1.6 km 的环形高极化异常，极化率 12–18 mV/V；"
              "土壤测量在 P2 南侧圈出 Cu–Mo 异常 AP-7，面积 0.62 km²。"),
        ("h2", "3.3 钻探成果"),
        ("p", "12 号勘探线的钻孔在 350 m 以下揭示了钾化带中的高品位脉状矿化，证实主矿体向北东"
              "深部延伸。8–12 号线加密后，控制资源量的工程间距已基本达到 100 m × 100 m。"),
        ("h1", "4 存在问题与 2025 年工作计划"),
        ("h2", "4.1 存在问题"),
        ("p", "F3 断裂带附近岩芯破碎，矿心采取率仅 72%，低于 80% 的规范要求，需要改用三层管"
              "取芯工艺。"),
        ("h2", "4.2 2025 年工作计划"),
        ("p", "2025 年计划钻探 9 000 m，重点验证 P2 斑岩体和 AP-7 异常，完成 8–12 号线的控制资源量"
              "估算，并开展次生富集带矿石的浮选试验。年度预算 2 860 万元。"),
    ],
}

TXT_PATH = "notes/AP-3 化探异常查证记录.txt"
TXT = """青山岭矿区 AP-3 号土壤化探异常查证记录

记录日期：2023 年 3 月 22 日。查证人：周雨辰、马天佑。本记录用于说明 AP-3 号化探异常的特征、地表查证结果和验证建议。

异常概况：AP-3 由 2022 年 1:10 000 土壤地球化学测量圈定，测网 100 m × 40 m，采集 B 层土壤，过 -80 目筛。异常位于矿区东南部青山岭主峰南坡，呈北东向椭圆形，长轴约 1.9 km。以 Cu 120 ppm 为异常下限，异常面积 1.38 km²，Cu 峰值 1 850 ppm，Mo 峰值 46 ppm，Au 峰值 86 ppb。

元素分带：异常具有明显的环状分带。内带为 Cu–Mo，中带为 Au–Ag，外带为 Pb–Zn–Mn，与斑岩型铜矿的化探分带模式一致，推测矿化中心位于异常北东段。

地表查证：施工探槽 TC-3-01 和 TC-3-02，揭露强绢英岩化石英闪长玢岩，见孔雀石（malachite）薄膜和褐铁矿化蜂窝构造。拣块样 Cu 最高 0.86 %。

结论与建议：AP-3 评为甲类异常（Class A anomaly），具有寻找斑岩型铜矿的良好前景。建议在异常北东段 16 号勘探线上布置验证钻孔 ZK-1601，设计孔深 400 m。
"""

NOTES = {
    "00-index.md": """---
owner: 青山岭项目技术组
updated: 2024-06-28
tags:
  - index
  - geology
---
# 青山岭铜金矿知识库索引 Index

青山岭（Qingshanling）斑岩型铜金矿勘查项目的资料索引。所有资料均为培训与演示用的虚构数据。

## 报告 Reports

- [[reports/porphyry-copper-model.pdf|斑岩型铜矿床地质特征与找矿标志]]：矿床模型、蚀变分带、脉系、找矿标志和勘查阶段。
- [[reports/QSL-2023-drillhole-assays.pdf|2023 年度钻孔样品分析结果]]：12 个钻孔的见矿区间表（Cu %、Au g/t、Mo ppm）。
- [[reports/ZK-0815 钻孔地质编录.pdf|ZK-0815 钻孔地质编录]]：8 号勘探线典型钻孔的逐段编录。
- [[reports/sampling-qaqc-procedure.pdf|采样与 QA/QC 质量控制规程]]：采样、制样、标准样、空白样和重复样要求。
- [[reports/青山岭2024年度勘查工作总结.docx|2024 年度勘查工作总结]]：工作量、主要成果和 2025 年计划。

## 原始记录 Field records

- [[scans/ZK-1042 野外备忘录扫描件.pdf|ZK-1042 野外备忘录（扫描件）]]：纸质野外备忘录的扫描件，没有文字层。
- [[notes/AP-3 化探异常查证记录.txt|AP-3 化探异常查证记录]]：土壤化探异常的地表查证。

术语的中英文对照见 [[术语表 Glossary]]。
""",
    "术语表 Glossary.md": """---
owner: 青山岭项目技术组
updated: 2024-06-28
tags:
  - glossary
  - geology
---
# 术语表 Glossary

本项目资料中常用的中英文地质术语对照。

| 中文 | English | 说明 |
| --- | --- | --- |
| 斑岩型铜矿 | porphyry copper deposit | 与浅成斑岩体有关的大型低品位铜矿 |
| 矿化蚀变 | alteration | 热液与围岩反应形成的新矿物组合 |
| 化探异常 | geochemical anomaly | 元素含量明显高于背景的区域 |
| 找矿标志 | prospecting indicator | 指示矿体可能存在的地质、化探、物探特征 |
| 钻孔 | drill hole | 编号格式 ZK-线号孔号，例如 ZK-1207 |
| 品位 | grade | Cu 以 %、Au 以 g/t、Mo 以 ppm 表示 |
| 边界品位 | cut-off grade | 圈定见矿区间的最低品位 |
| 标准样 | certified reference material (CRM) | 已知认定值的质控样 |
| 重复样 | duplicate | 同一样品的重复分析，用于评价精密度 |
| 空白样 | blank | 不含矿的质控样，用于检查污染 |

## 缩写 Abbreviations

- QA/QC：质量保证与质量控制（quality assurance / quality control）。
- HARD：半绝对相对差，用于评价重复样精密度。
- IP：激发极化法（induced polarization）。
"""
}
