; ModuleID = '/work/main/example_project/src/sort.c'
source_filename = "/work/main/example_project/src/sort.c"
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux5.10.0-gnu2.31.0"

; Function Attrs: nofree nosync nounwind memory(argmem: readwrite) uwtable
define void @mk_sort_ints(ptr noundef %0, i64 noundef %1) local_unnamed_addr #0 !dbg !13 {
  %3 = icmp eq ptr %0, null, !dbg !17
  %4 = icmp ult i64 %1, 2
  %5 = or i1 %3, %4, !dbg !18
  br i1 %5, label %72, label %47, !dbg !18

6:                                                ; preds = %47
  tail call fastcc void @introsort_loop(ptr noundef %0, i64 noundef %1, i32 noundef %50), !dbg !19
  %7 = add i64 %1, -1, !dbg !20
  %8 = and i64 %7, 1, !dbg !20
  %9 = icmp eq i64 %1, 2, !dbg !20
  br i1 %9, label %55, label %10, !dbg !20

10:                                               ; preds = %6
  %11 = and i64 %7, -2, !dbg !23
  br label %12, !dbg !23

12:                                               ; preds = %41, %10
  %13 = phi i64 [ 1, %10 ], [ %44, %41 ]
  %14 = phi i64 [ 0, %10 ], [ %45, %41 ]
  %15 = getelementptr inbounds nuw i32, ptr %0, i64 %13, !dbg !24
  %16 = load i32, ptr %15, align 4, !dbg !25, !tbaa !9
  br label %17, !dbg !26

17:                                               ; preds = %23, %12
  %18 = phi i64 [ %13, %12 ], [ %24, %23 ]
  %19 = getelementptr i32, ptr %0, i64 %18, !dbg !27
  %20 = getelementptr i8, ptr %19, i64 -4, !dbg !27
  %21 = load i32, ptr %20, align 4, !dbg !27, !tbaa !9
  %22 = icmp sgt i32 %21, %16, !dbg !28
  br i1 %22, label %23, label %26, !dbg !29

23:                                               ; preds = %17
  store i32 %21, ptr %19, align 4, !dbg !30, !tbaa !9
  %24 = add i64 %18, -1, !dbg !31
  %25 = icmp eq i64 %24, 0, !dbg !32
  br i1 %25, label %26, label %17, !dbg !33, !llvm.loop !34

26:                                               ; preds = %23, %17
  %27 = phi i64 [ 0, %23 ], [ %18, %17 ], !dbg !38
  %28 = getelementptr inbounds nuw i32, ptr %0, i64 %27, !dbg !39
  store i32 %16, ptr %28, align 4, !dbg !40, !tbaa !9
  %29 = add nuw i64 %13, 1, !dbg !41
  %30 = getelementptr inbounds nuw i32, ptr %0, i64 %29, !dbg !24
  %31 = load i32, ptr %30, align 4, !dbg !42, !tbaa !9
  br label %32, !dbg !43

32:                                               ; preds = %38, %26
  %33 = phi i64 [ %29, %26 ], [ %39, %38 ]
  %34 = getelementptr i32, ptr %0, i64 %33, !dbg !27
  %35 = getelementptr i8, ptr %34, i64 -4, !dbg !27
  %36 = load i32, ptr %35, align 4, !dbg !27, !tbaa !9
  %37 = icmp sgt i32 %36, %31, !dbg !28
  br i1 %37, label %38, label %41, !dbg !44

38:                                               ; preds = %32
  store i32 %36, ptr %34, align 4, !dbg !45, !tbaa !9
  %39 = add i64 %33, -1, !dbg !46
  %40 = icmp eq i64 %39, 0, !dbg !47
  br i1 %40, label %41, label %32, !dbg !48, !llvm.loop !34

41:                                               ; preds = %38, %32
  %42 = phi i64 [ 0, %38 ], [ %33, %32 ], !dbg !38
  %43 = getelementptr inbounds nuw i32, ptr %0, i64 %42, !dbg !39
  store i32 %31, ptr %43, align 4, !dbg !49, !tbaa !9
  %44 = add nuw i64 %13, 2, !dbg !50
  %45 = add i64 %14, 2, !dbg !51
  %46 = icmp eq i64 %45, %11, !dbg !51
  br i1 %46, label %53, label %12, !dbg !51, !llvm.loop !52

47:                                               ; preds = %2, %47
  %48 = phi i64 [ %51, %47 ], [ %1, %2 ]
  %49 = phi i32 [ %50, %47 ], [ 0, %2 ]
  %50 = add nuw nsw i32 %49, 2, !dbg !54
  %51 = lshr i64 %48, 1, !dbg !55
  %52 = icmp ugt i64 %48, 3, !dbg !56
  br i1 %52, label %47, label %6, !dbg !57, !llvm.loop !58

53:                                               ; preds = %41
  %54 = icmp eq i64 %8, 0, !dbg !61
  br i1 %54, label %72, label %55, !dbg !61

55:                                               ; preds = %53, %6
  %56 = phi i64 [ 1, %6 ], [ %44, %53 ]
  %57 = icmp ne i64 %8, 0, !dbg !26
  tail call void @llvm.assume(i1 %57), !dbg !26
  %58 = getelementptr inbounds nuw i32, ptr %0, i64 %56, !dbg !24
  %59 = load i32, ptr %58, align 4, !dbg !62, !tbaa !9
  br label %60, !dbg !63

60:                                               ; preds = %66, %55
  %61 = phi i64 [ %56, %55 ], [ %67, %66 ]
  %62 = getelementptr i32, ptr %0, i64 %61, !dbg !27
  %63 = getelementptr i8, ptr %62, i64 -4, !dbg !27
  %64 = load i32, ptr %63, align 4, !dbg !27, !tbaa !9
  %65 = icmp sgt i32 %64, %59, !dbg !28
  br i1 %65, label %66, label %69, !dbg !64

66:                                               ; preds = %60
  store i32 %64, ptr %62, align 4, !dbg !65, !tbaa !9
  %67 = add i64 %61, -1, !dbg !66
  %68 = icmp eq i64 %67, 0, !dbg !67
  br i1 %68, label %69, label %60, !dbg !68, !llvm.loop !34

69:                                               ; preds = %66, %60
  %70 = phi i64 [ 0, %66 ], [ %61, %60 ], !dbg !38
  %71 = getelementptr inbounds nuw i32, ptr %0, i64 %70, !dbg !39
  store i32 %59, ptr %71, align 4, !dbg !69, !tbaa !9
  br label %72, !dbg !70

72:                                               ; preds = %69, %53, %2
  ret void, !dbg !70
}

; Function Attrs: nofree nosync nounwind memory(argmem: readwrite) uwtable
define internal fastcc void @introsort_loop(ptr noundef nonnull %0, i64 noundef %1, i32 noundef %2) unnamed_addr #0 !dbg !71 {
  %4 = icmp ugt i64 %1, 16, !dbg !72
  br i1 %4, label %5, label %136, !dbg !73

5:                                                ; preds = %3, %132
  %6 = phi ptr [ %134, %132 ], [ %0, %3 ]
  %7 = phi i64 [ %133, %132 ], [ %1, %3 ]
  %8 = phi i32 [ %82, %132 ], [ %2, %3 ]
  %9 = icmp eq i32 %8, 0, !dbg !74
  br i1 %9, label %10, label %81, !dbg !75

10:                                               ; preds = %5
  %11 = lshr i64 %7, 1, !dbg !76
  br label %17, !dbg !79

12:                                               ; preds = %47
  %13 = add i64 %7, -1, !dbg !80
  %14 = getelementptr inbounds nuw i32, ptr %6, i64 %13, !dbg !81
  %15 = load i32, ptr %6, align 4, !dbg !82, !tbaa !9
  %16 = load i32, ptr %14, align 4, !dbg !85, !tbaa !9
  store i32 %16, ptr %6, align 4, !dbg !86, !tbaa !9
  store i32 %15, ptr %14, align 4, !dbg !87, !tbaa !9
  br label %49, !dbg !88

17:                                               ; preds = %47, %10
  %18 = phi i64 [ %19, %47 ], [ %11, %10 ]
  %19 = add nsw i64 %18, -1, !dbg !91
  %20 = shl i64 %19, 1, !dbg !92
  %21 = or disjoint i64 %20, 1, !dbg !94
  %22 = icmp ult i64 %21, %7, !dbg !95
  br i1 %22, label %23, label %47, !dbg !96

23:                                               ; preds = %17, %43
  %24 = phi i64 [ %45, %43 ], [ %21, %17 ]
  %25 = phi i64 [ %44, %43 ], [ %20, %17 ]
  %26 = phi i64 [ %37, %43 ], [ %19, %17 ]
  %27 = add nuw i64 %25, 2, !dbg !97
  %28 = icmp ult i64 %27, %7, !dbg !98
  br i1 %28, label %29, label %36, !dbg !99

29:                                               ; preds = %23
  %30 = getelementptr inbounds nuw i32, ptr %6, i64 %24, !dbg !100
  %31 = load i32, ptr %30, align 4, !dbg !100, !tbaa !9
  %32 = getelementptr inbounds nuw i32, ptr %6, i64 %27, !dbg !101
  %33 = load i32, ptr %32, align 4, !dbg !101, !tbaa !9
  %34 = icmp slt i32 %31, %33, !dbg !102
  %35 = select i1 %34, i64 %27, i64 %24, !dbg !103
  br label %36, !dbg !103

36:                                               ; preds = %29, %23
  %37 = phi i64 [ %24, %23 ], [ %35, %29 ], !dbg !104
  %38 = getelementptr inbounds nuw i32, ptr %6, i64 %26, !dbg !105
  %39 = load i32, ptr %38, align 4, !dbg !105, !tbaa !9
  %40 = getelementptr inbounds nuw i32, ptr %6, i64 %37, !dbg !106
  %41 = load i32, ptr %40, align 4, !dbg !106, !tbaa !9
  %42 = icmp slt i32 %39, %41, !dbg !107
  br i1 %42, label %43, label %47, !dbg !108

43:                                               ; preds = %36
  store i32 %41, ptr %38, align 4, !dbg !109, !tbaa !9
  store i32 %39, ptr %40, align 4, !dbg !111, !tbaa !9
  %44 = shl i64 %37, 1, !dbg !92
  %45 = or disjoint i64 %44, 1, !dbg !112
  %46 = icmp ult i64 %45, %7, !dbg !113
  br i1 %46, label %23, label %47, !dbg !114

47:                                               ; preds = %43, %36, %17
  %48 = icmp eq i64 %19, 0, !dbg !115
  br i1 %48, label %12, label %17, !dbg !116, !llvm.loop !117

49:                                               ; preds = %12, %75
  %50 = phi i32 [ %79, %75 ], [ %16, %12 ]
  %51 = phi i64 [ %76, %75 ], [ %13, %12 ]
  br label %52, !dbg !88

52:                                               ; preds = %49, %70
  %53 = phi i64 [ %73, %70 ], [ 1, %49 ]
  %54 = phi i64 [ %72, %70 ], [ 0, %49 ]
  %55 = phi i64 [ %66, %70 ], [ 0, %49 ]
  %56 = add nuw i64 %54, 2, !dbg !119
  %57 = icmp ult i64 %56, %51, !dbg !120
  br i1 %57, label %58, label %65, !dbg !88

58:                                               ; preds = %52
  %59 = getelementptr inbounds nuw i32, ptr %6, i64 %53, !dbg !121
  %60 = load i32, ptr %59, align 4, !dbg !121, !tbaa !9
  %61 = getelementptr inbounds nuw i32, ptr %6, i64 %56, !dbg !122
  %62 = load i32, ptr %61, align 4, !dbg !122, !tbaa !9
  %63 = icmp slt i32 %60, %62, !dbg !123
  %64 = select i1 %63, i64 %56, i64 %53, !dbg !124
  br label %65, !dbg !124

65:                                               ; preds = %58, %52
  %66 = phi i64 [ %53, %52 ], [ %64, %58 ], !dbg !125
  %67 = getelementptr inbounds nuw i32, ptr %6, i64 %66, !dbg !126
  %68 = load i32, ptr %67, align 4, !dbg !126, !tbaa !9
  %69 = icmp slt i32 %50, %68, !dbg !127
  br i1 %69, label %70, label %75, !dbg !128

70:                                               ; preds = %65
  %71 = getelementptr inbounds nuw i32, ptr %6, i64 %55, !dbg !129
  store i32 %68, ptr %71, align 4, !dbg !130, !tbaa !9
  store i32 %50, ptr %67, align 4, !dbg !132, !tbaa !9
  %72 = shl i64 %66, 1, !dbg !133
  %73 = or disjoint i64 %72, 1, !dbg !134
  %74 = icmp ult i64 %73, %51, !dbg !135
  br i1 %74, label %52, label %75, !dbg !136

75:                                               ; preds = %70, %65
  %76 = add i64 %51, -1, !dbg !137
  %77 = getelementptr inbounds nuw i32, ptr %6, i64 %76, !dbg !81
  %78 = load i32, ptr %6, align 4, !dbg !138, !tbaa !9
  %79 = load i32, ptr %77, align 4, !dbg !139, !tbaa !9
  store i32 %79, ptr %6, align 4, !dbg !140, !tbaa !9
  store i32 %78, ptr %77, align 4, !dbg !141, !tbaa !9
  %80 = icmp eq i64 %76, 1, !dbg !142
  br i1 %80, label %136, label %49, !dbg !143

81:                                               ; preds = %5
  %82 = add i32 %8, -1, !dbg !144
  %83 = lshr i64 %7, 1, !dbg !145
  %84 = add i64 %7, -1, !dbg !148
  %85 = getelementptr inbounds nuw i32, ptr %6, i64 %83, !dbg !149
  %86 = load i32, ptr %85, align 4, !dbg !149, !tbaa !9
  %87 = load i32, ptr %6, align 4, !dbg !150, !tbaa !9
  %88 = icmp slt i32 %86, %87, !dbg !151
  br i1 %88, label %89, label %91, !dbg !152

89:                                               ; preds = %81
  store i32 %87, ptr %85, align 4, !dbg !153, !tbaa !9
  store i32 %86, ptr %6, align 4, !dbg !155, !tbaa !9
  %90 = load i32, ptr %85, align 4, !dbg !156, !tbaa !9
  br label %91, !dbg !157

91:                                               ; preds = %89, %81
  %92 = phi i32 [ %90, %89 ], [ %86, %81 ], !dbg !156
  %93 = getelementptr inbounds nuw i32, ptr %6, i64 %84, !dbg !158
  %94 = load i32, ptr %93, align 4, !dbg !158, !tbaa !9
  %95 = icmp slt i32 %94, %92, !dbg !159
  br i1 %95, label %96, label %101, !dbg !160

96:                                               ; preds = %91
  store i32 %92, ptr %93, align 4, !dbg !161, !tbaa !9
  store i32 %94, ptr %85, align 4, !dbg !163, !tbaa !9
  %97 = load i32, ptr %6, align 4, !dbg !164, !tbaa !9
  %98 = icmp slt i32 %94, %97, !dbg !165
  br i1 %98, label %99, label %101, !dbg !166

99:                                               ; preds = %96
  store i32 %97, ptr %85, align 4, !dbg !167, !tbaa !9
  store i32 %94, ptr %6, align 4, !dbg !169, !tbaa !9
  %100 = load i32, ptr %85, align 4, !dbg !170, !tbaa !9
  br label %101, !dbg !171

101:                                              ; preds = %99, %96, %91
  %102 = phi i32 [ %94, %96 ], [ %100, %99 ], [ %92, %91 ], !dbg !170
  br label %103, !dbg !172

103:                                              ; preds = %122, %101
  %104 = phi i64 [ 0, %101 ], [ %111, %122 ], !dbg !173
  %105 = phi i64 [ %84, %101 ], [ %119, %122 ], !dbg !173
  br label %106, !dbg !174

106:                                              ; preds = %106, %103
  %107 = phi i64 [ %104, %103 ], [ %111, %106 ], !dbg !173
  %108 = getelementptr inbounds nuw i32, ptr %6, i64 %107, !dbg !175
  %109 = load i32, ptr %108, align 4, !dbg !175, !tbaa !9
  %110 = icmp slt i32 %109, %102, !dbg !176
  %111 = add i64 %107, 1, !dbg !177
  br i1 %110, label %106, label %112, !dbg !178, !llvm.loop !179

112:                                              ; preds = %106
  %113 = getelementptr inbounds nuw i32, ptr %6, i64 %107
  br label %114, !dbg !181

114:                                              ; preds = %112, %114
  %115 = phi i64 [ %119, %114 ], [ %105, %112 ], !dbg !173
  %116 = getelementptr inbounds nuw i32, ptr %6, i64 %115, !dbg !182
  %117 = load i32, ptr %116, align 4, !dbg !182, !tbaa !9
  %118 = icmp sgt i32 %117, %102, !dbg !183
  %119 = add i64 %115, -1, !dbg !184
  br i1 %118, label %114, label %120, !dbg !185, !llvm.loop !186

120:                                              ; preds = %114
  %121 = icmp ult i64 %107, %115, !dbg !188
  br i1 %121, label %122, label %124, !dbg !189

122:                                              ; preds = %120
  %123 = getelementptr inbounds nuw i32, ptr %6, i64 %115
  store i32 %117, ptr %113, align 4, !dbg !190, !tbaa !9
  store i32 %109, ptr %123, align 4, !dbg !192, !tbaa !9
  br label %103, !dbg !193, !llvm.loop !194

124:                                              ; preds = %120
  %125 = add i64 %115, 1, !dbg !196
  %126 = sub i64 %7, %125, !dbg !197
  %127 = icmp ult i64 %125, %126, !dbg !198
  br i1 %127, label %128, label %130, !dbg !199

128:                                              ; preds = %124
  tail call fastcc void @introsort_loop(ptr noundef %6, i64 noundef %125, i32 noundef %82), !dbg !200
  %129 = getelementptr inbounds nuw i32, ptr %6, i64 %125, !dbg !201
  br label %132, !dbg !202

130:                                              ; preds = %124
  %131 = getelementptr inbounds nuw i32, ptr %6, i64 %125, !dbg !203
  tail call fastcc void @introsort_loop(ptr noundef %131, i64 noundef %126, i32 noundef %82), !dbg !204
  br label %132

132:                                              ; preds = %130, %128
  %133 = phi i64 [ %126, %128 ], [ %125, %130 ], !dbg !205
  %134 = phi ptr [ %129, %128 ], [ %6, %130 ]
  %135 = icmp ugt i64 %133, 16, !dbg !206
  br i1 %135, label %5, label %136, !dbg !207, !llvm.loop !208

136:                                              ; preds = %132, %75, %3
  ret void, !dbg !211
}

; Function Attrs: nofree norecurse nosync nounwind memory(argmem: read) uwtable
define range(i32 0, 2) i32 @mk_is_sorted(ptr noundef readonly captures(none) %0, i64 noundef %1) local_unnamed_addr #1 !dbg !212 {
  %3 = icmp ugt i64 %1, 1, !dbg !213
  br i1 %3, label %7, label %14, !dbg !214

4:                                                ; preds = %7
  %5 = add nuw i64 %8, 1, !dbg !215
  %6 = icmp eq i64 %5, %1, !dbg !216
  br i1 %6, label %14, label %7, !dbg !217, !llvm.loop !218

7:                                                ; preds = %2, %4
  %8 = phi i64 [ %5, %4 ], [ 1, %2 ]
  %9 = getelementptr i32, ptr %0, i64 %8, !dbg !221
  %10 = getelementptr i8, ptr %9, i64 -4, !dbg !221
  %11 = load i32, ptr %10, align 4, !dbg !221, !tbaa !9
  %12 = load i32, ptr %9, align 4, !dbg !222, !tbaa !9
  %13 = icmp sgt i32 %11, %12, !dbg !223
  br i1 %13, label %14, label %4, !dbg !224

14:                                               ; preds = %7, %4, %2
  %15 = phi i32 [ 1, %2 ], [ 1, %4 ], [ 0, %7 ]
  ret i32 %15, !dbg !225
}

; Function Attrs: mustprogress nofree norecurse nosync nounwind willreturn memory(argmem: readwrite) uwtable
define i32 @mk_xorshift32(ptr noundef captures(none) %0) local_unnamed_addr #2 !dbg !226 {
  %2 = load i32, ptr %0, align 4, !dbg !227, !tbaa !9
  %3 = icmp eq i32 %2, 0, !dbg !228
  %4 = select i1 %3, i32 -1640531527, i32 %2, !dbg !229
  %5 = shl i32 %4, 13, !dbg !230
  %6 = xor i32 %5, %4, !dbg !231
  %7 = lshr i32 %6, 17, !dbg !232
  %8 = xor i32 %7, %6, !dbg !233
  %9 = shl i32 %8, 5, !dbg !234
  %10 = xor i32 %9, %8, !dbg !235
  store i32 %10, ptr %0, align 4, !dbg !236, !tbaa !9
  ret i32 %10, !dbg !237
}

; Function Attrs: nofree norecurse nosync nounwind memory(argmem: write) uwtable
define void @mk_fill_random(ptr noundef writeonly captures(none) %0, i64 noundef %1, i32 noundef %2) local_unnamed_addr #3 !dbg !238 {
  %4 = icmp eq i64 %1, 0, !dbg !239
  br i1 %4, label %25, label %5, !dbg !240

5:                                                ; preds = %3
  %6 = and i64 %1, 1, !dbg !241
  %7 = icmp eq i64 %1, 1, !dbg !241
  br i1 %7, label %12, label %8, !dbg !241

8:                                                ; preds = %5
  %9 = and i64 %1, -2, !dbg !241
  br label %26, !dbg !241

10:                                               ; preds = %26
  %11 = icmp eq i64 %6, 0, !dbg !241
  br i1 %11, label %25, label %12, !dbg !241

12:                                               ; preds = %10, %5
  %13 = phi i64 [ 0, %5 ], [ %49, %10 ]
  %14 = phi i32 [ %2, %5 ], [ %46, %10 ]
  %15 = icmp ne i64 %6, 0, !dbg !242
  tail call void @llvm.assume(i1 %15), !dbg !242
  %16 = icmp eq i32 %14, 0, !dbg !243
  %17 = select i1 %16, i32 -1640531527, i32 %14, !dbg !245
  %18 = shl i32 %17, 13, !dbg !246
  %19 = xor i32 %18, %17, !dbg !247
  %20 = lshr i32 %19, 17, !dbg !248
  %21 = xor i32 %20, %19, !dbg !249
  %22 = shl i32 %21, 5, !dbg !250
  %23 = xor i32 %22, %21, !dbg !251
  %24 = getelementptr inbounds nuw i32, ptr %0, i64 %13, !dbg !252
  store i32 %23, ptr %24, align 4, !dbg !253, !tbaa !9
  br label %25, !dbg !254

25:                                               ; preds = %12, %10, %3
  ret void, !dbg !254

26:                                               ; preds = %26, %8
  %27 = phi i64 [ 0, %8 ], [ %49, %26 ]
  %28 = phi i32 [ %2, %8 ], [ %46, %26 ]
  %29 = phi i64 [ 0, %8 ], [ %50, %26 ]
  %30 = icmp eq i32 %28, 0, !dbg !255
  %31 = select i1 %30, i32 -1640531527, i32 %28, !dbg !256
  %32 = shl i32 %31, 13, !dbg !246
  %33 = xor i32 %32, %31, !dbg !257
  %34 = lshr i32 %33, 17, !dbg !248
  %35 = xor i32 %34, %33, !dbg !258
  %36 = shl i32 %35, 5, !dbg !250
  %37 = xor i32 %36, %35, !dbg !259
  %38 = getelementptr inbounds nuw i32, ptr %0, i64 %27, !dbg !252
  store i32 %37, ptr %38, align 4, !dbg !260, !tbaa !9
  %39 = icmp eq i32 %36, %35, !dbg !261
  %40 = select i1 %39, i32 -1640531527, i32 %37, !dbg !262
  %41 = shl i32 %40, 13, !dbg !246
  %42 = xor i32 %41, %40, !dbg !263
  %43 = lshr i32 %42, 17, !dbg !248
  %44 = xor i32 %43, %42, !dbg !264
  %45 = shl i32 %44, 5, !dbg !250
  %46 = xor i32 %45, %44, !dbg !265
  %47 = getelementptr inbounds nuw i32, ptr %0, i64 %27, !dbg !252
  %48 = getelementptr inbounds nuw i8, ptr %47, i64 4, !dbg !252
  store i32 %46, ptr %48, align 4, !dbg !266, !tbaa !9
  %49 = add nuw i64 %27, 2, !dbg !267
  %50 = add i64 %29, 2, !dbg !268
  %51 = icmp eq i64 %50, %9, !dbg !268
  br i1 %51, label %10, label %26, !dbg !268, !llvm.loop !269
}

; Function Attrs: nocallback nofree nosync nounwind willreturn memory(inaccessiblemem: write)
declare void @llvm.assume(i1 noundef) #4

attributes #0 = { nofree nosync nounwind memory(argmem: readwrite) uwtable "frame-pointer"="all" "min-legal-vector-width"="0" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="x86-64" "target-features"="+64bit,+cmov,+cx8,+fxsr,+idivq-to-divl,+macrofusion,+mmx,+nopl,+slow-3ops-lea,+slow-incdec,+sse,+sse2,+vzeroupper,+x87,-16bit-mode,-32bit-mode,-adx,-aes,-allow-light-256-bit,-amx-avx512,-amx-bf16,-amx-complex,-amx-fp16,-amx-fp8,-amx-int8,-amx-movrs,-amx-tf32,-amx-tile,-avx,-avx10.1,-avx10.2,-avx2,-avx512bf16,-avx512bitalg,-avx512bw,-avx512cd,-avx512dq,-avx512f,-avx512fp16,-avx512ifma,-avx512vbmi,-avx512vbmi2,-avx512vl,-avx512vnni,-avx512vp2intersect,-avx512vpopcntdq,-avxifma,-avxneconvert,-avxvnni,-avxvnniint16,-avxvnniint8,-bmi,-bmi2,-branch-hint,-branchfusion,-ccmp,-cf,-cldemote,-clflushopt,-clwb,-clzero,-cmpccxadd,-crc32,-cx16,-egpr,-enqcmd,-ermsb,-f16c,-false-deps-getmant,-false-deps-lzcnt-tzcnt,-false-deps-mulc,-false-deps-mullq,-false-deps-perm,-false-deps-popcnt,-false-deps-range,-fast-11bytenop,-fast-15bytenop,-fast-7bytenop,-fast-bextr,-fast-dpwssd,-fast-gather,-fast-hops,-fast-imm16,-fast-lzcnt,-fast-movbe,-fast-scalar-fsqrt,-fast-scalar-shift-masks,-fast-shld-rotate,-fast-variable-crosslane-shuffle,-fast-variable-perlane-shuffle,-fast-vector-fsqrt,-fast-vector-shift-masks,-faster-shift-than-shuffle,-fma,-fma4,-fsgsbase,-fsrm,-gfni,-harden-sls-ijmp,-harden-sls-ret,-hreset,-idivl-to-divb,-inline-asm-use-gpr32,-invpcid,-kl,-lea-sp,-lea-uses-ag,-lvi-cfi,-lvi-load-hardening,-lwp,-lzcnt,-movbe,-movdir64b,-movdiri,-movrs,-mwaitx,-ndd,-nf,-no-bypass-delay,-no-bypass-delay-blend,-no-bypass-delay-mov,-no-bypass-delay-shuffle,-pad-short-functions,-pclmul,-pconfig,-pku,-popcnt,-ppx,-prefer-128-bit,-prefer-256-bit,-prefer-legacy-setcc,-prefer-mask-registers,-prefer-movmsk-over-vtest,-prefer-no-gather,-prefer-no-scatter,-prefetchi,-prfchw,-ptwrite,-push2pop2,-raoint,-rdpid,-rdpru,-rdrnd,-rdseed,-retpoline,-retpoline-external-thunk,-retpoline-indirect-branches,-retpoline-indirect-calls,-rtm,-sahf,-sbb-dep-breaking,-serialize,-seses,-sgx,-sha,-sha512,-shstk,-slow-lea,-slow-pmaddwd,-slow-pmulld,-slow-pmullq,-slow-shld,-slow-two-mem-ops,-slow-unaligned-mem-16,-slow-unaligned-mem-32,-sm3,-sm4,-sse-unaligned-mem,-sse3,-sse4.1,-sse4.2,-sse4a,-ssse3,-tagged-globals,-tbm,-tsxldtrk,-tuning-fast-imm-vector-shift,-uintr,-use-glm-div-sqrt-costs,-use-slm-arith-costs,-usermsr,-vaes,-vpclmulqdq,-waitpkg,-wbnoinvd,-widekl,-xop,-xsave,-xsavec,-xsaveopt,-xsaves,-zu" "tune-cpu"="generic" }
attributes #1 = { nofree norecurse nosync nounwind memory(argmem: read) uwtable "frame-pointer"="all" "min-legal-vector-width"="0" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="x86-64" "target-features"="+64bit,+cmov,+cx8,+fxsr,+idivq-to-divl,+macrofusion,+mmx,+nopl,+slow-3ops-lea,+slow-incdec,+sse,+sse2,+vzeroupper,+x87,-16bit-mode,-32bit-mode,-adx,-aes,-allow-light-256-bit,-amx-avx512,-amx-bf16,-amx-complex,-amx-fp16,-amx-fp8,-amx-int8,-amx-movrs,-amx-tf32,-amx-tile,-avx,-avx10.1,-avx10.2,-avx2,-avx512bf16,-avx512bitalg,-avx512bw,-avx512cd,-avx512dq,-avx512f,-avx512fp16,-avx512ifma,-avx512vbmi,-avx512vbmi2,-avx512vl,-avx512vnni,-avx512vp2intersect,-avx512vpopcntdq,-avxifma,-avxneconvert,-avxvnni,-avxvnniint16,-avxvnniint8,-bmi,-bmi2,-branch-hint,-branchfusion,-ccmp,-cf,-cldemote,-clflushopt,-clwb,-clzero,-cmpccxadd,-crc32,-cx16,-egpr,-enqcmd,-ermsb,-f16c,-false-deps-getmant,-false-deps-lzcnt-tzcnt,-false-deps-mulc,-false-deps-mullq,-false-deps-perm,-false-deps-popcnt,-false-deps-range,-fast-11bytenop,-fast-15bytenop,-fast-7bytenop,-fast-bextr,-fast-dpwssd,-fast-gather,-fast-hops,-fast-imm16,-fast-lzcnt,-fast-movbe,-fast-scalar-fsqrt,-fast-scalar-shift-masks,-fast-shld-rotate,-fast-variable-crosslane-shuffle,-fast-variable-perlane-shuffle,-fast-vector-fsqrt,-fast-vector-shift-masks,-faster-shift-than-shuffle,-fma,-fma4,-fsgsbase,-fsrm,-gfni,-harden-sls-ijmp,-harden-sls-ret,-hreset,-idivl-to-divb,-inline-asm-use-gpr32,-invpcid,-kl,-lea-sp,-lea-uses-ag,-lvi-cfi,-lvi-load-hardening,-lwp,-lzcnt,-movbe,-movdir64b,-movdiri,-movrs,-mwaitx,-ndd,-nf,-no-bypass-delay,-no-bypass-delay-blend,-no-bypass-delay-mov,-no-bypass-delay-shuffle,-pad-short-functions,-pclmul,-pconfig,-pku,-popcnt,-ppx,-prefer-128-bit,-prefer-256-bit,-prefer-legacy-setcc,-prefer-mask-registers,-prefer-movmsk-over-vtest,-prefer-no-gather,-prefer-no-scatter,-prefetchi,-prfchw,-ptwrite,-push2pop2,-raoint,-rdpid,-rdpru,-rdrnd,-rdseed,-retpoline,-retpoline-external-thunk,-retpoline-indirect-branches,-retpoline-indirect-calls,-rtm,-sahf,-sbb-dep-breaking,-serialize,-seses,-sgx,-sha,-sha512,-shstk,-slow-lea,-slow-pmaddwd,-slow-pmulld,-slow-pmullq,-slow-shld,-slow-two-mem-ops,-slow-unaligned-mem-16,-slow-unaligned-mem-32,-sm3,-sm4,-sse-unaligned-mem,-sse3,-sse4.1,-sse4.2,-sse4a,-ssse3,-tagged-globals,-tbm,-tsxldtrk,-tuning-fast-imm-vector-shift,-uintr,-use-glm-div-sqrt-costs,-use-slm-arith-costs,-usermsr,-vaes,-vpclmulqdq,-waitpkg,-wbnoinvd,-widekl,-xop,-xsave,-xsavec,-xsaveopt,-xsaves,-zu" "tune-cpu"="generic" }
attributes #2 = { mustprogress nofree norecurse nosync nounwind willreturn memory(argmem: readwrite) uwtable "frame-pointer"="all" "min-legal-vector-width"="0" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="x86-64" "target-features"="+64bit,+cmov,+cx8,+fxsr,+idivq-to-divl,+macrofusion,+mmx,+nopl,+slow-3ops-lea,+slow-incdec,+sse,+sse2,+vzeroupper,+x87,-16bit-mode,-32bit-mode,-adx,-aes,-allow-light-256-bit,-amx-avx512,-amx-bf16,-amx-complex,-amx-fp16,-amx-fp8,-amx-int8,-amx-movrs,-amx-tf32,-amx-tile,-avx,-avx10.1,-avx10.2,-avx2,-avx512bf16,-avx512bitalg,-avx512bw,-avx512cd,-avx512dq,-avx512f,-avx512fp16,-avx512ifma,-avx512vbmi,-avx512vbmi2,-avx512vl,-avx512vnni,-avx512vp2intersect,-avx512vpopcntdq,-avxifma,-avxneconvert,-avxvnni,-avxvnniint16,-avxvnniint8,-bmi,-bmi2,-branch-hint,-branchfusion,-ccmp,-cf,-cldemote,-clflushopt,-clwb,-clzero,-cmpccxadd,-crc32,-cx16,-egpr,-enqcmd,-ermsb,-f16c,-false-deps-getmant,-false-deps-lzcnt-tzcnt,-false-deps-mulc,-false-deps-mullq,-false-deps-perm,-false-deps-popcnt,-false-deps-range,-fast-11bytenop,-fast-15bytenop,-fast-7bytenop,-fast-bextr,-fast-dpwssd,-fast-gather,-fast-hops,-fast-imm16,-fast-lzcnt,-fast-movbe,-fast-scalar-fsqrt,-fast-scalar-shift-masks,-fast-shld-rotate,-fast-variable-crosslane-shuffle,-fast-variable-perlane-shuffle,-fast-vector-fsqrt,-fast-vector-shift-masks,-faster-shift-than-shuffle,-fma,-fma4,-fsgsbase,-fsrm,-gfni,-harden-sls-ijmp,-harden-sls-ret,-hreset,-idivl-to-divb,-inline-asm-use-gpr32,-invpcid,-kl,-lea-sp,-lea-uses-ag,-lvi-cfi,-lvi-load-hardening,-lwp,-lzcnt,-movbe,-movdir64b,-movdiri,-movrs,-mwaitx,-ndd,-nf,-no-bypass-delay,-no-bypass-delay-blend,-no-bypass-delay-mov,-no-bypass-delay-shuffle,-pad-short-functions,-pclmul,-pconfig,-pku,-popcnt,-ppx,-prefer-128-bit,-prefer-256-bit,-prefer-legacy-setcc,-prefer-mask-registers,-prefer-movmsk-over-vtest,-prefer-no-gather,-prefer-no-scatter,-prefetchi,-prfchw,-ptwrite,-push2pop2,-raoint,-rdpid,-rdpru,-rdrnd,-rdseed,-retpoline,-retpoline-external-thunk,-retpoline-indirect-branches,-retpoline-indirect-calls,-rtm,-sahf,-sbb-dep-breaking,-serialize,-seses,-sgx,-sha,-sha512,-shstk,-slow-lea,-slow-pmaddwd,-slow-pmulld,-slow-pmullq,-slow-shld,-slow-two-mem-ops,-slow-unaligned-mem-16,-slow-unaligned-mem-32,-sm3,-sm4,-sse-unaligned-mem,-sse3,-sse4.1,-sse4.2,-sse4a,-ssse3,-tagged-globals,-tbm,-tsxldtrk,-tuning-fast-imm-vector-shift,-uintr,-use-glm-div-sqrt-costs,-use-slm-arith-costs,-usermsr,-vaes,-vpclmulqdq,-waitpkg,-wbnoinvd,-widekl,-xop,-xsave,-xsavec,-xsaveopt,-xsaves,-zu" "tune-cpu"="generic" }
attributes #3 = { nofree norecurse nosync nounwind memory(argmem: write) uwtable "frame-pointer"="all" "min-legal-vector-width"="0" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="x86-64" "target-features"="+64bit,+cmov,+cx8,+fxsr,+idivq-to-divl,+macrofusion,+mmx,+nopl,+slow-3ops-lea,+slow-incdec,+sse,+sse2,+vzeroupper,+x87,-16bit-mode,-32bit-mode,-adx,-aes,-allow-light-256-bit,-amx-avx512,-amx-bf16,-amx-complex,-amx-fp16,-amx-fp8,-amx-int8,-amx-movrs,-amx-tf32,-amx-tile,-avx,-avx10.1,-avx10.2,-avx2,-avx512bf16,-avx512bitalg,-avx512bw,-avx512cd,-avx512dq,-avx512f,-avx512fp16,-avx512ifma,-avx512vbmi,-avx512vbmi2,-avx512vl,-avx512vnni,-avx512vp2intersect,-avx512vpopcntdq,-avxifma,-avxneconvert,-avxvnni,-avxvnniint16,-avxvnniint8,-bmi,-bmi2,-branch-hint,-branchfusion,-ccmp,-cf,-cldemote,-clflushopt,-clwb,-clzero,-cmpccxadd,-crc32,-cx16,-egpr,-enqcmd,-ermsb,-f16c,-false-deps-getmant,-false-deps-lzcnt-tzcnt,-false-deps-mulc,-false-deps-mullq,-false-deps-perm,-false-deps-popcnt,-false-deps-range,-fast-11bytenop,-fast-15bytenop,-fast-7bytenop,-fast-bextr,-fast-dpwssd,-fast-gather,-fast-hops,-fast-imm16,-fast-lzcnt,-fast-movbe,-fast-scalar-fsqrt,-fast-scalar-shift-masks,-fast-shld-rotate,-fast-variable-crosslane-shuffle,-fast-variable-perlane-shuffle,-fast-vector-fsqrt,-fast-vector-shift-masks,-faster-shift-than-shuffle,-fma,-fma4,-fsgsbase,-fsrm,-gfni,-harden-sls-ijmp,-harden-sls-ret,-hreset,-idivl-to-divb,-inline-asm-use-gpr32,-invpcid,-kl,-lea-sp,-lea-uses-ag,-lvi-cfi,-lvi-load-hardening,-lwp,-lzcnt,-movbe,-movdir64b,-movdiri,-movrs,-mwaitx,-ndd,-nf,-no-bypass-delay,-no-bypass-delay-blend,-no-bypass-delay-mov,-no-bypass-delay-shuffle,-pad-short-functions,-pclmul,-pconfig,-pku,-popcnt,-ppx,-prefer-128-bit,-prefer-256-bit,-prefer-legacy-setcc,-prefer-mask-registers,-prefer-movmsk-over-vtest,-prefer-no-gather,-prefer-no-scatter,-prefetchi,-prfchw,-ptwrite,-push2pop2,-raoint,-rdpid,-rdpru,-rdrnd,-rdseed,-retpoline,-retpoline-external-thunk,-retpoline-indirect-branches,-retpoline-indirect-calls,-rtm,-sahf,-sbb-dep-breaking,-serialize,-seses,-sgx,-sha,-sha512,-shstk,-slow-lea,-slow-pmaddwd,-slow-pmulld,-slow-pmullq,-slow-shld,-slow-two-mem-ops,-slow-unaligned-mem-16,-slow-unaligned-mem-32,-sm3,-sm4,-sse-unaligned-mem,-sse3,-sse4.1,-sse4.2,-sse4a,-ssse3,-tagged-globals,-tbm,-tsxldtrk,-tuning-fast-imm-vector-shift,-uintr,-use-glm-div-sqrt-costs,-use-slm-arith-costs,-usermsr,-vaes,-vpclmulqdq,-waitpkg,-wbnoinvd,-widekl,-xop,-xsave,-xsavec,-xsaveopt,-xsaves,-zu" "tune-cpu"="generic" }
attributes #4 = { nocallback nofree nosync nounwind willreturn memory(inaccessiblemem: write) }

!llvm.dbg.cu = !{!0}
!llvm.module.flags = !{!2, !3, !4, !5, !6, !7}
!llvm.ident = !{!8}
!llvm.errno.tbaa = !{!9}

!0 = distinct !DICompileUnit(language: DW_LANG_C11, file: !1, producer: "clang version 22.1.8", isOptimized: true, runtimeVersion: 0, emissionKind: LineTablesOnly, splitDebugInlining: false, nameTableKind: None)
!1 = !DIFile(filename: "/work/main/example_project/src/sort.c", directory: "/work/main")
!2 = !{i32 7, !"Dwarf Version", i32 4}
!3 = !{i32 2, !"Debug Info Version", i32 3}
!4 = !{i32 1, !"wchar_size", i32 4}
!5 = !{i32 8, !"PIC Level", i32 2}
!6 = !{i32 7, !"uwtable", i32 2}
!7 = !{i32 7, !"frame-pointer", i32 2}
!8 = !{!"clang version 22.1.8"}
!9 = !{!10, !10, i64 0}
!10 = !{!"int", !11, i64 0}
!11 = !{!"omnipotent char", !12, i64 0}
!12 = !{!"Simple C/C++ TBAA"}
!13 = distinct !DISubprogram(name: "mk_sort_ints", scope: !14, file: !14, line: 140, type: !15, scopeLine: 141, flags: DIFlagPrototyped | DIFlagAllCallsDescribed, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !0, keyInstructions: true)
!14 = !DIFile(filename: "example_project/src/sort.c", directory: "/work/main")
!15 = !DISubroutineType(types: !16)
!16 = !{}
!17 = !DILocation(line: 142, column: 11, scope: !13, atomGroup: 1, atomRank: 2)
!18 = !DILocation(line: 142, column: 19, scope: !13, atomGroup: 1, atomRank: 1)
!19 = !DILocation(line: 150, column: 5, scope: !13)
!20 = !DILocation(line: 30, column: 5, scope: !21, inlinedAt: !22)
!21 = distinct !DISubprogram(name: "insertion_sort", scope: !14, file: !14, line: 28, type: !15, scopeLine: 29, flags: DIFlagPrototyped | DIFlagAllCallsDescribed, spFlags: DISPFlagLocalToUnit | DISPFlagDefinition | DISPFlagOptimized, unit: !0, keyInstructions: true)
!22 = distinct !DILocation(line: 154, column: 5, scope: !13)
!23 = !DILocation(line: 30, column: 5, scope: !21, inlinedAt: !22, atomGroup: 38, atomRank: 1)
!24 = !DILocation(line: 31, column: 21, scope: !21, inlinedAt: !22)
!25 = !DILocation(line: 31, column: 21, scope: !21, inlinedAt: !22, atomGroup: 4, atomRank: 2)
!26 = !DILocation(line: 33, column: 22, scope: !21, inlinedAt: !22, atomGroup: 36, atomRank: 1)
!27 = !DILocation(line: 33, column: 25, scope: !21, inlinedAt: !22)
!28 = !DILocation(line: 33, column: 34, scope: !21, inlinedAt: !22)
!29 = !DILocation(line: 33, column: 9, scope: !21, inlinedAt: !22, atomGroup: 7, atomRank: 1)
!30 = !DILocation(line: 34, column: 18, scope: !21, inlinedAt: !22, atomGroup: 8, atomRank: 1)
!31 = !DILocation(line: 35, column: 14, scope: !21, inlinedAt: !22, atomGroup: 9, atomRank: 2)
!32 = !DILocation(line: 33, column: 18, scope: !21, inlinedAt: !22, atomGroup: 6, atomRank: 2)
!33 = !DILocation(line: 33, column: 22, scope: !21, inlinedAt: !22, atomGroup: 6, atomRank: 1)
!34 = distinct !{!34, !35, !36, !37}
!35 = !DILocation(line: 33, column: 9, scope: !21, inlinedAt: !22)
!36 = !DILocation(line: 36, column: 9, scope: !21, inlinedAt: !22)
!37 = !{!"llvm.loop.mustprogress"}
!38 = !DILocation(line: 0, scope: !21, inlinedAt: !22)
!39 = !DILocation(line: 37, column: 9, scope: !21, inlinedAt: !22)
!40 = !DILocation(line: 37, column: 14, scope: !21, inlinedAt: !22, atomGroup: 10, atomRank: 1)
!41 = !DILocation(line: 30, column: 32, scope: !21, inlinedAt: !22, atomGroup: 11, atomRank: 2)
!42 = !DILocation(line: 31, column: 21, scope: !21, inlinedAt: !22, atomGroup: 55, atomRank: 2)
!43 = !DILocation(line: 33, column: 22, scope: !21, inlinedAt: !22, atomGroup: 56, atomRank: 1)
!44 = !DILocation(line: 33, column: 9, scope: !21, inlinedAt: !22, atomGroup: 57, atomRank: 1)
!45 = !DILocation(line: 34, column: 18, scope: !21, inlinedAt: !22, atomGroup: 58, atomRank: 1)
!46 = !DILocation(line: 35, column: 14, scope: !21, inlinedAt: !22, atomGroup: 59, atomRank: 2)
!47 = !DILocation(line: 33, column: 18, scope: !21, inlinedAt: !22, atomGroup: 60, atomRank: 2)
!48 = !DILocation(line: 33, column: 22, scope: !21, inlinedAt: !22, atomGroup: 60, atomRank: 1)
!49 = !DILocation(line: 37, column: 14, scope: !21, inlinedAt: !22, atomGroup: 61, atomRank: 1)
!50 = !DILocation(line: 30, column: 32, scope: !21, inlinedAt: !22, atomGroup: 62, atomRank: 2)
!51 = !DILocation(line: 30, column: 5, scope: !21, inlinedAt: !22, atomGroup: 64, atomRank: 1)
!52 = distinct !{!52, !20, !53, !37}
!53 = !DILocation(line: 38, column: 5, scope: !21, inlinedAt: !22)
!54 = !DILocation(line: 148, column: 22, scope: !13, atomGroup: 8, atomRank: 2)
!55 = !DILocation(line: 147, column: 33, scope: !13, atomGroup: 9, atomRank: 2)
!56 = !DILocation(line: 147, column: 26, scope: !13, atomGroup: 6, atomRank: 1)
!57 = !DILocation(line: 147, column: 5, scope: !13, atomGroup: 7, atomRank: 1)
!58 = distinct !{!58, !59, !60, !37}
!59 = !DILocation(line: 147, column: 5, scope: !13)
!60 = !DILocation(line: 149, column: 5, scope: !13)
!61 = !DILocation(line: 33, column: 22, scope: !21, inlinedAt: !22)
!62 = !DILocation(line: 31, column: 21, scope: !21, inlinedAt: !22, atomGroup: 45, atomRank: 2)
!63 = !DILocation(line: 33, column: 22, scope: !21, inlinedAt: !22, atomGroup: 46, atomRank: 1)
!64 = !DILocation(line: 33, column: 9, scope: !21, inlinedAt: !22, atomGroup: 47, atomRank: 1)
!65 = !DILocation(line: 34, column: 18, scope: !21, inlinedAt: !22, atomGroup: 48, atomRank: 1)
!66 = !DILocation(line: 35, column: 14, scope: !21, inlinedAt: !22, atomGroup: 49, atomRank: 2)
!67 = !DILocation(line: 33, column: 18, scope: !21, inlinedAt: !22, atomGroup: 50, atomRank: 2)
!68 = !DILocation(line: 33, column: 22, scope: !21, inlinedAt: !22, atomGroup: 50, atomRank: 1)
!69 = !DILocation(line: 37, column: 14, scope: !21, inlinedAt: !22, atomGroup: 51, atomRank: 1)
!70 = !DILocation(line: 155, column: 1, scope: !13, atomGroup: 11, atomRank: 1)
!71 = distinct !DISubprogram(name: "introsort_loop", scope: !14, file: !14, line: 115, type: !15, scopeLine: 116, flags: DIFlagPrototyped | DIFlagAllCallsDescribed, spFlags: DISPFlagLocalToUnit | DISPFlagDefinition | DISPFlagOptimized, unit: !0, keyInstructions: true)
!72 = !DILocation(line: 117, column: 14, scope: !71, atomGroup: 30, atomRank: 1)
!73 = !DILocation(line: 117, column: 5, scope: !71, atomGroup: 31, atomRank: 1)
!74 = !DILocation(line: 118, column: 26, scope: !71, atomGroup: 3, atomRank: 2)
!75 = !DILocation(line: 118, column: 26, scope: !71, atomGroup: 3, atomRank: 1)
!76 = !DILocation(line: 65, column: 23, scope: !77, inlinedAt: !78, atomGroup: 3, atomRank: 2)
!77 = distinct !DISubprogram(name: "heap_sort", scope: !14, file: !14, line: 60, type: !15, scopeLine: 61, flags: DIFlagPrototyped | DIFlagAllCallsDescribed, spFlags: DISPFlagLocalToUnit | DISPFlagDefinition | DISPFlagOptimized, unit: !0, keyInstructions: true)
!78 = distinct !DILocation(line: 119, column: 13, scope: !71)
!79 = !DILocation(line: 65, column: 5, scope: !77, inlinedAt: !78)
!80 = !DILocation(line: 68, scope: !77, inlinedAt: !78, atomGroup: 25, atomRank: 2)
!81 = !DILocation(line: 69, column: 27, scope: !77, inlinedAt: !78)
!82 = !DILocation(line: 22, column: 17, scope: !83, inlinedAt: !84, atomGroup: 32, atomRank: 2)
!83 = distinct !DISubprogram(name: "swap_ints", scope: !14, file: !14, line: 20, type: !15, scopeLine: 21, flags: DIFlagPrototyped | DIFlagAllCallsDescribed, spFlags: DISPFlagLocalToUnit | DISPFlagDefinition | DISPFlagOptimized, unit: !0, keyInstructions: true)
!84 = distinct !DILocation(line: 69, column: 9, scope: !77, inlinedAt: !78)
!85 = !DILocation(line: 23, column: 10, scope: !83, inlinedAt: !84, atomGroup: 33, atomRank: 2)
!86 = !DILocation(line: 23, column: 8, scope: !83, inlinedAt: !84, atomGroup: 33, atomRank: 1)
!87 = !DILocation(line: 24, column: 8, scope: !83, inlinedAt: !84, atomGroup: 34, atomRank: 1)
!88 = !DILocation(line: 49, column: 27, scope: !89, inlinedAt: !90, atomGroup: 4, atomRank: 1)
!89 = distinct !DISubprogram(name: "sift_down", scope: !14, file: !14, line: 42, type: !15, scopeLine: 43, flags: DIFlagPrototyped | DIFlagAllCallsDescribed, spFlags: DISPFlagLocalToUnit | DISPFlagDefinition | DISPFlagOptimized, unit: !0, keyInstructions: true)
!90 = distinct !DILocation(line: 70, column: 9, scope: !77, inlinedAt: !78)
!91 = !DILocation(line: 65, column: 29, scope: !77, inlinedAt: !78, atomGroup: 4, atomRank: 2)
!92 = !DILocation(line: 45, column: 26, scope: !89, inlinedAt: !93)
!93 = distinct !DILocation(line: 66, column: 9, scope: !77, inlinedAt: !78)
!94 = !DILocation(line: 45, column: 33, scope: !89, inlinedAt: !93, atomGroup: 21, atomRank: 2)
!95 = !DILocation(line: 46, column: 19, scope: !89, inlinedAt: !93, atomGroup: 22, atomRank: 2)
!96 = !DILocation(line: 46, column: 19, scope: !89, inlinedAt: !93, atomGroup: 22, atomRank: 1)
!97 = !DILocation(line: 49, column: 19, scope: !89, inlinedAt: !93)
!98 = !DILocation(line: 49, column: 23, scope: !89, inlinedAt: !93, atomGroup: 4, atomRank: 2)
!99 = !DILocation(line: 49, column: 27, scope: !89, inlinedAt: !93, atomGroup: 4, atomRank: 1)
!100 = !DILocation(line: 49, column: 30, scope: !89, inlinedAt: !93)
!101 = !DILocation(line: 49, column: 41, scope: !89, inlinedAt: !93)
!102 = !DILocation(line: 49, column: 39, scope: !89, inlinedAt: !93, atomGroup: 5, atomRank: 2)
!103 = !DILocation(line: 49, column: 27, scope: !89, inlinedAt: !93, atomGroup: 5, atomRank: 1)
!104 = !DILocation(line: 0, scope: !89, inlinedAt: !93)
!105 = !DILocation(line: 52, column: 13, scope: !89, inlinedAt: !93)
!106 = !DILocation(line: 52, column: 24, scope: !89, inlinedAt: !93)
!107 = !DILocation(line: 52, column: 21, scope: !89, inlinedAt: !93, atomGroup: 7, atomRank: 2)
!108 = !DILocation(line: 52, column: 21, scope: !89, inlinedAt: !93, atomGroup: 7, atomRank: 1)
!109 = !DILocation(line: 23, column: 8, scope: !83, inlinedAt: !110, atomGroup: 2, atomRank: 1)
!110 = distinct !DILocation(line: 55, column: 9, scope: !89, inlinedAt: !93)
!111 = !DILocation(line: 24, column: 8, scope: !83, inlinedAt: !110, atomGroup: 3, atomRank: 1)
!112 = !DILocation(line: 45, column: 33, scope: !89, inlinedAt: !93, atomGroup: 1, atomRank: 2)
!113 = !DILocation(line: 46, column: 19, scope: !89, inlinedAt: !93, atomGroup: 2, atomRank: 2)
!114 = !DILocation(line: 46, column: 19, scope: !89, inlinedAt: !93, atomGroup: 2, atomRank: 1)
!115 = !DILocation(line: 65, column: 32, scope: !77, inlinedAt: !78, atomGroup: 5, atomRank: 1)
!116 = !DILocation(line: 65, column: 5, scope: !77, inlinedAt: !78, atomGroup: 6, atomRank: 1)
!117 = distinct !{!117, !79, !118, !37}
!118 = !DILocation(line: 67, column: 5, scope: !77, inlinedAt: !78)
!119 = !DILocation(line: 49, column: 19, scope: !89, inlinedAt: !90)
!120 = !DILocation(line: 49, column: 23, scope: !89, inlinedAt: !90, atomGroup: 4, atomRank: 2)
!121 = !DILocation(line: 49, column: 30, scope: !89, inlinedAt: !90)
!122 = !DILocation(line: 49, column: 41, scope: !89, inlinedAt: !90)
!123 = !DILocation(line: 49, column: 39, scope: !89, inlinedAt: !90, atomGroup: 5, atomRank: 2)
!124 = !DILocation(line: 49, column: 27, scope: !89, inlinedAt: !90, atomGroup: 5, atomRank: 1)
!125 = !DILocation(line: 0, scope: !89, inlinedAt: !90)
!126 = !DILocation(line: 52, column: 24, scope: !89, inlinedAt: !90)
!127 = !DILocation(line: 52, column: 21, scope: !89, inlinedAt: !90, atomGroup: 7, atomRank: 2)
!128 = !DILocation(line: 52, column: 21, scope: !89, inlinedAt: !90, atomGroup: 7, atomRank: 1)
!129 = !DILocation(line: 52, column: 13, scope: !89, inlinedAt: !90)
!130 = !DILocation(line: 23, column: 8, scope: !83, inlinedAt: !131, atomGroup: 2, atomRank: 1)
!131 = distinct !DILocation(line: 55, column: 9, scope: !89, inlinedAt: !90)
!132 = !DILocation(line: 24, column: 8, scope: !83, inlinedAt: !131, atomGroup: 3, atomRank: 1)
!133 = !DILocation(line: 45, column: 26, scope: !89, inlinedAt: !90)
!134 = !DILocation(line: 45, column: 33, scope: !89, inlinedAt: !90, atomGroup: 1, atomRank: 2)
!135 = !DILocation(line: 46, column: 19, scope: !89, inlinedAt: !90, atomGroup: 2, atomRank: 2)
!136 = !DILocation(line: 46, column: 19, scope: !89, inlinedAt: !90, atomGroup: 2, atomRank: 1)
!137 = !DILocation(line: 68, scope: !77, inlinedAt: !78, atomGroup: 8, atomRank: 2)
!138 = !DILocation(line: 22, column: 17, scope: !83, inlinedAt: !84, atomGroup: 1, atomRank: 2)
!139 = !DILocation(line: 23, column: 10, scope: !83, inlinedAt: !84, atomGroup: 2, atomRank: 2)
!140 = !DILocation(line: 23, column: 8, scope: !83, inlinedAt: !84, atomGroup: 2, atomRank: 1)
!141 = !DILocation(line: 24, column: 8, scope: !83, inlinedAt: !84, atomGroup: 3, atomRank: 1)
!142 = !DILocation(line: 46, column: 19, scope: !89, inlinedAt: !90, atomGroup: 22, atomRank: 2)
!143 = !DILocation(line: 46, column: 19, scope: !89, inlinedAt: !90, atomGroup: 22, atomRank: 1)
!144 = !DILocation(line: 122, column: 21, scope: !71, atomGroup: 5, atomRank: 2)
!145 = !DILocation(line: 82, column: 20, scope: !146, inlinedAt: !147, atomGroup: 1, atomRank: 2)
!146 = distinct !DISubprogram(name: "partition", scope: !14, file: !14, line: 80, type: !15, scopeLine: 81, flags: DIFlagPrototyped | DIFlagAllCallsDescribed, spFlags: DISPFlagLocalToUnit | DISPFlagDefinition | DISPFlagOptimized, unit: !0, keyInstructions: true)
!147 = distinct !DILocation(line: 124, column: 20, scope: !71)
!148 = !DILocation(line: 83, column: 21, scope: !146, inlinedAt: !147, atomGroup: 2, atomRank: 2)
!149 = !DILocation(line: 86, column: 9, scope: !146, inlinedAt: !147)
!150 = !DILocation(line: 86, column: 18, scope: !146, inlinedAt: !147)
!151 = !DILocation(line: 86, column: 16, scope: !146, inlinedAt: !147, atomGroup: 3, atomRank: 2)
!152 = !DILocation(line: 86, column: 16, scope: !146, inlinedAt: !147, atomGroup: 3, atomRank: 1)
!153 = !DILocation(line: 23, column: 8, scope: !83, inlinedAt: !154, atomGroup: 2, atomRank: 1)
!154 = distinct !DILocation(line: 87, column: 9, scope: !146, inlinedAt: !147)
!155 = !DILocation(line: 24, column: 8, scope: !83, inlinedAt: !154, atomGroup: 3, atomRank: 1)
!156 = !DILocation(line: 89, column: 19, scope: !146, inlinedAt: !147)
!157 = !DILocation(line: 88, column: 5, scope: !146, inlinedAt: !147)
!158 = !DILocation(line: 89, column: 9, scope: !146, inlinedAt: !147)
!159 = !DILocation(line: 89, column: 17, scope: !146, inlinedAt: !147, atomGroup: 4, atomRank: 2)
!160 = !DILocation(line: 89, column: 17, scope: !146, inlinedAt: !147, atomGroup: 4, atomRank: 1)
!161 = !DILocation(line: 23, column: 8, scope: !83, inlinedAt: !162, atomGroup: 2, atomRank: 1)
!162 = distinct !DILocation(line: 90, column: 9, scope: !146, inlinedAt: !147)
!163 = !DILocation(line: 24, column: 8, scope: !83, inlinedAt: !162, atomGroup: 3, atomRank: 1)
!164 = !DILocation(line: 91, column: 22, scope: !146, inlinedAt: !147)
!165 = !DILocation(line: 91, column: 20, scope: !146, inlinedAt: !147, atomGroup: 5, atomRank: 2)
!166 = !DILocation(line: 91, column: 20, scope: !146, inlinedAt: !147, atomGroup: 5, atomRank: 1)
!167 = !DILocation(line: 23, column: 8, scope: !83, inlinedAt: !168, atomGroup: 2, atomRank: 1)
!168 = distinct !DILocation(line: 92, column: 13, scope: !146, inlinedAt: !147)
!169 = !DILocation(line: 24, column: 8, scope: !83, inlinedAt: !168, atomGroup: 3, atomRank: 1)
!170 = !DILocation(line: 95, column: 21, scope: !146, inlinedAt: !147, atomGroup: 6, atomRank: 2)
!171 = !DILocation(line: 93, column: 9, scope: !146, inlinedAt: !147)
!172 = !DILocation(line: 99, column: 5, scope: !146, inlinedAt: !147)
!173 = !DILocation(line: 0, scope: !146, inlinedAt: !147)
!174 = !DILocation(line: 100, column: 9, scope: !146, inlinedAt: !147)
!175 = !DILocation(line: 100, column: 16, scope: !146, inlinedAt: !147)
!176 = !DILocation(line: 100, column: 21, scope: !146, inlinedAt: !147, atomGroup: 9, atomRank: 1)
!177 = !DILocation(line: 101, column: 14, scope: !146, inlinedAt: !147, atomGroup: 11, atomRank: 2)
!178 = !DILocation(line: 100, column: 9, scope: !146, inlinedAt: !147, atomGroup: 10, atomRank: 1)
!179 = distinct !{!179, !174, !180, !37}
!180 = !DILocation(line: 102, column: 9, scope: !146, inlinedAt: !147)
!181 = !DILocation(line: 103, column: 9, scope: !146, inlinedAt: !147)
!182 = !DILocation(line: 103, column: 16, scope: !146, inlinedAt: !147)
!183 = !DILocation(line: 103, column: 21, scope: !146, inlinedAt: !147, atomGroup: 12, atomRank: 1)
!184 = !DILocation(line: 104, column: 14, scope: !146, inlinedAt: !147, atomGroup: 14, atomRank: 2)
!185 = !DILocation(line: 103, column: 9, scope: !146, inlinedAt: !147, atomGroup: 13, atomRank: 1)
!186 = distinct !{!186, !181, !187, !37}
!187 = !DILocation(line: 105, column: 9, scope: !146, inlinedAt: !147)
!188 = !DILocation(line: 106, column: 15, scope: !146, inlinedAt: !147, atomGroup: 15, atomRank: 2)
!189 = !DILocation(line: 106, column: 15, scope: !146, inlinedAt: !147, atomGroup: 15, atomRank: 1)
!190 = !DILocation(line: 23, column: 8, scope: !83, inlinedAt: !191, atomGroup: 2, atomRank: 1)
!191 = distinct !DILocation(line: 109, column: 9, scope: !146, inlinedAt: !147)
!192 = !DILocation(line: 24, column: 8, scope: !83, inlinedAt: !191, atomGroup: 3, atomRank: 1)
!193 = !DILocation(line: 99, column: 5, scope: !146, inlinedAt: !147, atomGroup: 19, atomRank: 1)
!194 = distinct !{!194, !172, !195}
!195 = !DILocation(line: 112, column: 5, scope: !146, inlinedAt: !147)
!196 = !DILocation(line: 125, column: 27, scope: !71, atomGroup: 7, atomRank: 2)
!197 = !DILocation(line: 126, column: 28, scope: !71, atomGroup: 8, atomRank: 2)
!198 = !DILocation(line: 129, column: 20, scope: !71, atomGroup: 9, atomRank: 2)
!199 = !DILocation(line: 129, column: 20, scope: !71, atomGroup: 9, atomRank: 1)
!200 = !DILocation(line: 130, column: 13, scope: !71)
!201 = !DILocation(line: 131, column: 15, scope: !71, atomGroup: 10, atomRank: 2)
!202 = !DILocation(line: 133, column: 9, scope: !71)
!203 = !DILocation(line: 134, column: 30, scope: !71)
!204 = !DILocation(line: 134, column: 13, scope: !71)
!205 = !DILocation(line: 0, scope: !71)
!206 = !DILocation(line: 117, column: 14, scope: !71, atomGroup: 1, atomRank: 1)
!207 = !DILocation(line: 117, column: 5, scope: !71, atomGroup: 2, atomRank: 1)
!208 = distinct !{!208, !209, !210, !37}
!209 = !DILocation(line: 117, column: 5, scope: !71)
!210 = !DILocation(line: 137, column: 5, scope: !71)
!211 = !DILocation(line: 138, column: 1, scope: !71, atomGroup: 13, atomRank: 1)
!212 = distinct !DISubprogram(name: "mk_is_sorted", scope: !14, file: !14, line: 157, type: !15, scopeLine: 158, flags: DIFlagPrototyped | DIFlagAllCallsDescribed, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !0, keyInstructions: true)
!213 = !DILocation(line: 159, column: 26, scope: !212, atomGroup: 41, atomRank: 1)
!214 = !DILocation(line: 159, column: 5, scope: !212, atomGroup: 42, atomRank: 1)
!215 = !DILocation(line: 159, column: 32, scope: !212, atomGroup: 6, atomRank: 2)
!216 = !DILocation(line: 159, column: 26, scope: !212, atomGroup: 2, atomRank: 1)
!217 = !DILocation(line: 159, column: 5, scope: !212, atomGroup: 3, atomRank: 1)
!218 = distinct !{!218, !219, !220, !37}
!219 = !DILocation(line: 159, column: 5, scope: !212)
!220 = !DILocation(line: 163, column: 5, scope: !212)
!221 = !DILocation(line: 160, column: 13, scope: !212)
!222 = !DILocation(line: 160, column: 24, scope: !212)
!223 = !DILocation(line: 160, column: 22, scope: !212, atomGroup: 4, atomRank: 2)
!224 = !DILocation(line: 160, column: 22, scope: !212, atomGroup: 4, atomRank: 1)
!225 = !DILocation(line: 165, column: 1, scope: !212, atomGroup: 9, atomRank: 1)
!226 = distinct !DISubprogram(name: "mk_xorshift32", scope: !14, file: !14, line: 167, type: !15, scopeLine: 168, flags: DIFlagPrototyped | DIFlagAllCallsDescribed, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !0, keyInstructions: true)
!227 = !DILocation(line: 169, column: 18, scope: !226, atomGroup: 1, atomRank: 2)
!228 = !DILocation(line: 170, column: 11, scope: !226, atomGroup: 2, atomRank: 2)
!229 = !DILocation(line: 170, column: 11, scope: !226, atomGroup: 2, atomRank: 1)
!230 = !DILocation(line: 174, column: 12, scope: !226)
!231 = !DILocation(line: 174, column: 7, scope: !226, atomGroup: 4, atomRank: 2)
!232 = !DILocation(line: 175, column: 12, scope: !226)
!233 = !DILocation(line: 175, column: 7, scope: !226, atomGroup: 5, atomRank: 2)
!234 = !DILocation(line: 176, column: 12, scope: !226)
!235 = !DILocation(line: 176, column: 7, scope: !226, atomGroup: 6, atomRank: 2)
!236 = !DILocation(line: 177, column: 12, scope: !226, atomGroup: 7, atomRank: 1)
!237 = !DILocation(line: 178, column: 5, scope: !226, atomGroup: 9, atomRank: 1)
!238 = distinct !DISubprogram(name: "mk_fill_random", scope: !14, file: !14, line: 192, type: !15, scopeLine: 193, flags: DIFlagPrototyped | DIFlagAllCallsDescribed, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !0, keyInstructions: true)
!239 = !DILocation(line: 195, column: 26, scope: !238, atomGroup: 43, atomRank: 1)
!240 = !DILocation(line: 195, column: 5, scope: !238, atomGroup: 44, atomRank: 1)
!241 = !DILocation(line: 195, column: 5, scope: !238)
!242 = !DILocation(line: 195, column: 5, scope: !238, atomGroup: 4, atomRank: 1)
!243 = !DILocation(line: 170, column: 11, scope: !226, inlinedAt: !244, atomGroup: 65, atomRank: 2)
!244 = distinct !DILocation(line: 196, column: 27, scope: !238)
!245 = !DILocation(line: 170, column: 11, scope: !226, inlinedAt: !244, atomGroup: 65, atomRank: 1)
!246 = !DILocation(line: 174, column: 12, scope: !226, inlinedAt: !244)
!247 = !DILocation(line: 174, column: 7, scope: !226, inlinedAt: !244, atomGroup: 66, atomRank: 2)
!248 = !DILocation(line: 175, column: 12, scope: !226, inlinedAt: !244)
!249 = !DILocation(line: 175, column: 7, scope: !226, inlinedAt: !244, atomGroup: 67, atomRank: 2)
!250 = !DILocation(line: 176, column: 12, scope: !226, inlinedAt: !244)
!251 = !DILocation(line: 176, column: 7, scope: !226, inlinedAt: !244, atomGroup: 68, atomRank: 2)
!252 = !DILocation(line: 196, column: 9, scope: !238)
!253 = !DILocation(line: 196, column: 14, scope: !238, atomGroup: 69, atomRank: 1)
!254 = !DILocation(line: 198, column: 1, scope: !238, atomGroup: 8, atomRank: 1)
!255 = !DILocation(line: 170, column: 11, scope: !226, inlinedAt: !244, atomGroup: 2, atomRank: 2)
!256 = !DILocation(line: 170, column: 11, scope: !226, inlinedAt: !244, atomGroup: 2, atomRank: 1)
!257 = !DILocation(line: 174, column: 7, scope: !226, inlinedAt: !244, atomGroup: 4, atomRank: 2)
!258 = !DILocation(line: 175, column: 7, scope: !226, inlinedAt: !244, atomGroup: 5, atomRank: 2)
!259 = !DILocation(line: 176, column: 7, scope: !226, inlinedAt: !244, atomGroup: 6, atomRank: 2)
!260 = !DILocation(line: 196, column: 14, scope: !238, atomGroup: 5, atomRank: 1)
!261 = !DILocation(line: 170, column: 11, scope: !226, inlinedAt: !244, atomGroup: 73, atomRank: 2)
!262 = !DILocation(line: 170, column: 11, scope: !226, inlinedAt: !244, atomGroup: 73, atomRank: 1)
!263 = !DILocation(line: 174, column: 7, scope: !226, inlinedAt: !244, atomGroup: 74, atomRank: 2)
!264 = !DILocation(line: 175, column: 7, scope: !226, inlinedAt: !244, atomGroup: 75, atomRank: 2)
!265 = !DILocation(line: 176, column: 7, scope: !226, inlinedAt: !244, atomGroup: 76, atomRank: 2)
!266 = !DILocation(line: 196, column: 14, scope: !238, atomGroup: 77, atomRank: 1)
!267 = !DILocation(line: 195, column: 32, scope: !238, atomGroup: 78, atomRank: 2)
!268 = !DILocation(line: 195, column: 5, scope: !238, atomGroup: 80, atomRank: 1)
!269 = distinct !{!269, !241, !270, !37}
!270 = !DILocation(line: 197, column: 5, scope: !238)
